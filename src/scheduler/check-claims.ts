/**
 * Claims of pending agents' approval checks, so that N replicas make one chain read per agent per
 * check instead of N: every replica computes the same check numbers (pending-agents.ts), and the
 * first to insert the claim of (agent, check) makes it. As the claims of slots, they rest on
 * unique keys, which decide races on FerretDB as on MongoDB. A replica that claimed a check and
 * then died leaves it unmade: the agent is checked again at its next check, a second later in its
 * first minute.
 */
export interface CheckClaims {
  /** Claims each of these checks; answers the keys this call won. Keys come from checkKeyOf. */
  claim(keys: readonly string[], now: Date): Promise<ReadonlySet<string>>;
}

export const checkKeyOf = (agentId: string, check: number) => `${agentId}@${check}`;

/** How long a claim is kept: past it no replica asks for that check any more (they are by age). */
export const CHECK_CLAIM_TTL_MS = 10 * 60_000;

/** The claims of one process's replicas (tests, and the in-memory mode's single process). */
export function createMemoryCheckClaims(): CheckClaims {
  const claims = new Map<string, number>();
  let nextSweepAt = 0;
  return {
    async claim(keys, now) {
      const nowMs = now.getTime();
      if (nowMs >= nextSweepAt) {
        for (const [key, at] of claims) if (at + CHECK_CLAIM_TTL_MS <= nowMs) claims.delete(key);
        nextSweepAt = nowMs + CHECK_CLAIM_TTL_MS / 10;
      }
      const won = new Set<string>();
      for (const key of keys) {
        if (claims.has(key)) continue;
        claims.set(key, nowMs);
        won.add(key);
      }
      return won;
    },
  };
}
