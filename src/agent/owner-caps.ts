import { ResourceExhaustedError } from "../domain/errors.ts";
import type { AgentStore, OwnerAgentCounts } from "./agent-store.ts";

/** The caps of one owner: the service's defaults, or what an admin set on the caller's key. */
export interface AgentCaps {
  /** Pending, active and paused agents (MAX_AGENTS_PER_OWNER). */
  readonly maxAgents: number;
  /** Pending agents, waiting for an approval (MAX_PENDING_PER_OWNER). */
  readonly maxPending: number;
}

/** Which cap refused a create, as metrics label it. */
export type AgentCap = "agents" | "pending";

export interface OwnerCaps {
  /**
   * Takes a place for one new pending agent of `owner` under `caps` (the defaults when absent), or
   * throws ResourceExhaustedError naming the cap and what the owner holds. The returned function
   * gives the place back when the create did not happen.
   */
  reserve(owner: string, caps?: Partial<AgentCaps>): Promise<() => void>;
}

/**
 * Caps per owner, so that one key cannot hold millions of agents (each pending one is checked on
 * the chain for up to APPROVAL_WAIT_HOURS). Counting asks the store, which on FerretDB reads the
 * whole agents collection, so an answer is reused for `reuseMs` (COUNT_REUSE_MS) with this replica's own creates
 * added; a create the reused answer would refuse asks the store again first, so a refusal always
 * rests on a fresh count. Replicas racing on one owner's last places may pass a cap by what the
 * others created within `reuseMs` (as the webhook endpoint cap may).
 */
export function createOwnerCaps(options: {
  store: Pick<AgentStore, "countOf">;
  defaults: AgentCaps;
  reuseMs?: number;
  /** Told of each refusal (a metric). */
  onRefused?: (cap: AgentCap) => void;
  now?: () => number;
}): OwnerCaps {
  const { store, defaults } = options;
  const reuseMs = options.reuseMs ?? COUNT_REUSE_MS;
  const now = options.now ?? (() => performance.now());
  /** Counts per owner, as last read plus what was created here since. */
  const known = new Map<string, { held: number; pending: number; at: number }>();

  const fits = (counts: OwnerAgentCounts, caps: AgentCaps) =>
    counts.held < caps.maxAgents && counts.pending < caps.maxPending;

  return {
    async reserve(owner, override) {
      const caps: AgentCaps = {
        maxAgents: override?.maxAgents ?? defaults.maxAgents,
        maxPending: override?.maxPending ?? defaults.maxPending,
      };
      let counts = known.get(owner);
      if (counts === undefined || now() - counts.at >= reuseMs || !fits(counts, caps)) {
        const fresh = await store.countOf(owner);
        counts = { ...fresh, at: now() };
        known.set(owner, counts);
        // Bounded: owners seen within reuseMs are all that is worth keeping.
        if (known.size > MAX_OWNERS_KEPT) {
          for (const [key, entry] of known) if (now() - entry.at >= reuseMs) known.delete(key);
        }
      }
      if (counts.held >= caps.maxAgents) {
        options.onRefused?.("agents");
        throw new ResourceExhaustedError(
          `this owner has ${counts.held} agents (pending, active and paused), the most allowed (${caps.maxAgents}, ${override?.maxAgents === undefined ? "MAX_AGENTS_PER_OWNER" : "this API key's max agents"}); delete one first`,
        );
      }
      if (counts.pending >= caps.maxPending) {
        options.onRefused?.("pending");
        throw new ResourceExhaustedError(
          `this owner has ${counts.pending} pending agents, the most allowed (${caps.maxPending}, ${override?.maxPending === undefined ? "MAX_PENDING_PER_OWNER" : "this API key's max pending agents"}); approve or delete one first`,
        );
      }
      const held = counts;
      held.held++;
      held.pending++;
      let given = false;
      return () => {
        if (given) return;
        given = true;
        held.held--;
        held.pending--;
      };
    },
  };
}

/** Owners whose counts are remembered before the stale ones are dropped. */
const MAX_OWNERS_KEPT = 10_000;
/**
 * How long a count is reused (with this replica's creates added). On FerretDB a count reads every
 * agent (1-4 s at 10,000 on a busy 2-core machine), so an owner creating steadily pays it once
 * in this long, not once a create.
 */
const COUNT_REUSE_MS = 5_000;
