/** How one attempt ended, for metrics. */
export type AttemptResult =
  | "delivered"
  | "http_error"
  | "gone"
  | "redirect"
  | "refused"
  | "no_answer"
  | "endpoint_gone";

export interface DeliveryObserver {
  onAttempt?(result: AttemptResult, seconds: number): void;
  /** A delivery ended: delivered (with its lag from the event), failed, or canceled. */
  onSettled?(status: "delivered" | "failed" | "canceled", lagSeconds: number): void;
  /** A delivery refused for where it pointed (`reason`: the address range, or "redirect"). */
  onRefused?(reason: string): void;
  onDisabled?(reason: "gone" | "failing"): void;
  onError?(error: unknown): void;
}
