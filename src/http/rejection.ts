/**
 * Why a connection or request was turned away before any handler saw it. A fixed set, so metrics
 * labelled with it stay bounded.
 */
export type Rejection =
  | "connection_limit"
  | "headers_timeout"
  | "request_timeout"
  | "headers_too_large"
  | "malformed_http";
