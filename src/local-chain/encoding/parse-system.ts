import { type ParsedInfo, reader } from "./instruction-reader.ts";

/** System instructions as Agave's parse_system.rs parses them (bincode, a u32 tag); lamports and space are integers. */
export function parseSystem(data: Uint8Array, a: readonly string[]): ParsedInfo | undefined {
  const r = reader(data);
  const need = (n: number) => a.length >= n;
  switch (r.u32()) {
    case 0: {
      const lamports = r.u64();
      const space = r.u64();
      const owner = r.pubkey();
      return need(2)
        ? { type: "createAccount", info: { source: a[0], newAccount: a[1], lamports, space, owner } }
        : undefined;
    }
    case 1: {
      const owner = r.pubkey();
      return need(1) ? { type: "assign", info: { account: a[0], owner } } : undefined;
    }
    case 2: {
      const lamports = r.u64();
      return need(2) ? { type: "transfer", info: { source: a[0], destination: a[1], lamports } } : undefined;
    }
    case 3: {
      const base = r.pubkey();
      const seed = r.string();
      const lamports = r.u64();
      const space = r.u64();
      const owner = r.pubkey();
      return need(2)
        ? {
            type: "createAccountWithSeed",
            info: { source: a[0], newAccount: a[1], base, seed, lamports, space, owner },
          }
        : undefined;
    }
    case 4:
      return need(3)
        ? {
            type: "advanceNonce",
            info: { nonceAccount: a[0], recentBlockhashesSysvar: a[1], nonceAuthority: a[2] },
          }
        : undefined;
    case 5: {
      const lamports = r.u64();
      return need(5)
        ? {
            type: "withdrawFromNonce",
            info: {
              nonceAccount: a[0],
              destination: a[1],
              recentBlockhashesSysvar: a[2],
              rentSysvar: a[3],
              nonceAuthority: a[4],
              lamports,
            },
          }
        : undefined;
    }
    case 6: {
      const authority = r.pubkey();
      return need(3)
        ? {
            type: "initializeNonce",
            info: {
              nonceAccount: a[0],
              recentBlockhashesSysvar: a[1],
              rentSysvar: a[2],
              nonceAuthority: authority,
            },
          }
        : undefined;
    }
    case 7: {
      const authority = r.pubkey();
      return need(2)
        ? {
            type: "authorizeNonce",
            info: { nonceAccount: a[0], nonceAuthority: a[1], newAuthorized: authority },
          }
        : undefined;
    }
    case 8: {
      const space = r.u64();
      return need(1) ? { type: "allocate", info: { account: a[0], space } } : undefined;
    }
    case 9: {
      const base = r.pubkey();
      const seed = r.string();
      const space = r.u64();
      const owner = r.pubkey();
      return need(2)
        ? { type: "allocateWithSeed", info: { account: a[0], base, seed, space, owner } }
        : undefined;
    }
    case 10: {
      const base = r.pubkey();
      const seed = r.string();
      const owner = r.pubkey();
      return need(2) ? { type: "assignWithSeed", info: { account: a[0], base, seed, owner } } : undefined;
    }
    case 11: {
      const lamports = r.u64();
      const sourceSeed = r.string();
      const sourceOwner = r.pubkey();
      return need(3)
        ? {
            type: "transferWithSeed",
            info: { source: a[0], sourceBase: a[1], destination: a[2], lamports, sourceSeed, sourceOwner },
          }
        : undefined;
    }
    case 12:
      return need(1) ? { type: "upgradeNonce", info: { nonceAccount: a[0] } } : undefined;
    default:
      return undefined;
  }
}
