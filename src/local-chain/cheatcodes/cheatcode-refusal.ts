/** The loaders: an account they own is a program or a program's data. */
const LOADERS: ReadonlyMap<string, string> = new Map([
  ["BPFLoader1111111111111111111111111111111111", "BPF Loader (deprecated)"],
  ["BPFLoader2111111111111111111111111111111111", "BPF Loader"],
  ["BPFLoaderUpgradeab1e11111111111111111111111", "BPF Loader Upgradeable"],
  ["LoaderV411111111111111111111111111111111111", "Loader v4"],
  ["NativeLoader1111111111111111111111111111111", "the native loader"],
]);

/** What the sysvars belong to; every sysvar's own address starts with "Sysvar" too. */
const SYSVAR_OWNER = "Sysvar1111111111111111111111111111111111111";

/** The programs the service's transactions and reads depend on: a chain without them is broken. */
const DEPENDED_ON: ReadonlyMap<string, string> = new Map([
  ["11111111111111111111111111111111", "the System program"],
  ["TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", "the SPL Token program"],
  ["TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb", "the Token-2022 program"],
  ["ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL", "the Associated Token Account program"],
  ["MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr", "the Memo program"],
  ["Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo", "the Memo program (v1)"],
  ["ComputeBudget111111111111111111111111111111", "the Compute Budget program"],
]);

/** The runtime's builtins and native programs, whether this LiteSVM holds them or not. */
const BUILTINS: ReadonlyMap<string, string> = new Map([
  ...LOADERS,
  ["Vote111111111111111111111111111111111111111", "the Vote program"],
  ["Stake11111111111111111111111111111111111111", "the Stake program"],
  ["Config1111111111111111111111111111111111111", "the Config program"],
  ["AddressLookupTab1e1111111111111111111111111", "the Address Lookup Table program"],
  ["Ed25519SigVerify111111111111111111111111111", "the Ed25519 signature program"],
  ["KeccakSecp256k11111111111111111111111111111", "the Secp256k1 signature program"],
  ["Secp256r1SigVerify1111111111111111111111111", "the Secp256r1 signature program"],
  ["ZkE1Gama1Proof11111111111111111111111111111", "the ZK ElGamal Proof program"],
  ["ZkTokenProof1111111111111111111111111111111", "the ZK Token Proof program"],
  ["Feature111111111111111111111111111111111111", "the Feature program"],
  [SYSVAR_OWNER, "the sysvar owner"],
]);

/** An account as a cheatcode finds it, or as it would write it. */
interface AccountShape {
  readonly programAddress: string;
  readonly executable: boolean;
}

/**
 * Why a cheatcode must not write `address` (its present state `existing`, the state it would
 * leave `next`), or undefined when it may. Cheatcodes fund wallets and set token and data
 * accounts; they never touch what the runtime and the service run on: programs (executable
 * accounts, anything a loader owns, builtins), sysvars, and the programs the service depends on,
 * nor make an account a program (executable, or given to a loader). One such write (the SPL Token
 * program replaced by a System account) would fail every owner's token transaction until a restart.
 */
export function cheatcodeRefusal(
  address: string,
  existing: AccountShape | undefined,
  next: AccountShape,
): string | undefined {
  const rule = "cheatcodes do not write programs, sysvars or the programs the service depends on";
  const named = DEPENDED_ON.get(address) ?? BUILTINS.get(address);
  if (named !== undefined) return `${address} is ${named}: ${rule}`;
  if (address.startsWith("Sysvar")) return `${address} is a sysvar: ${rule}`;
  if (existing !== undefined) {
    if (existing.executable) return `${address} is an executable account (a program): ${rule}`;
    const loader = LOADERS.get(existing.programAddress);
    if (loader !== undefined)
      return `${address} is owned by ${loader} (${existing.programAddress}), a program or its data: ${rule}`;
    if (existing.programAddress === SYSVAR_OWNER) return `${address} is a sysvar: ${rule}`;
  }
  if (next.executable)
    return `executable: cheatcodes do not make an account executable (${address}); deploy a program with a loader's transactions`;
  const loader = LOADERS.get(next.programAddress);
  if (loader !== undefined)
    return `owner: ${next.programAddress} is a loader (${loader}): cheatcodes do not give an account (${address}) to a loader`;
  if (next.programAddress === SYSVAR_OWNER)
    return `owner: ${next.programAddress} is the sysvar owner: cheatcodes do not make an account (${address}) a sysvar`;
  return undefined;
}
