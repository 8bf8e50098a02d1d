import type { Address } from "@solana/kit";
import { FailedTransactionMetadata, type LiteSVM, SimulatedTransactionInfo } from "litesvm";
import { base58Address } from "../../chain/base58-address.ts";
import type { WireTransaction } from "./wire-transaction.ts";

type Simulated = ReturnType<LiteSVM["simulateTransaction"]>;
type Sent = ReturnType<LiteSVM["sendTransaction"]>;
type PostAccount = ReturnType<SimulatedTransactionInfo["postAccounts"]>[number];

/** The binding's account, as LiteSVM's native side hands it over. */
interface NativeAccount {
  data(): Uint8Array;
  executable(): boolean;
  lamports(): bigint;
  owner(): Uint8Array;
}
interface NativeSimulated {
  postAccounts(): { address: Uint8Array; account(): NativeAccount }[];
}
type NativeRun = (bytes: Uint8Array) => unknown;

/**
 * A simulation's result whose post-accounts are named with the byte-array base58 codec: the
 * wrapper's own names each through kit's BigInt codec (the simulated accounts of every swap).
 */
class SimulatedInfo extends SimulatedTransactionInfo {
  readonly #native: NativeSimulated;
  constructor(native: NativeSimulated) {
    super(native as never);
    this.#native = native;
  }
  override postAccounts(): PostAccount[] {
    return this.#native.postAccounts().map((entry) => {
      const native = entry.account();
      const data = native.data();
      return {
        address: base58Address(entry.address) as Address,
        executable: native.executable(),
        lamports: native.lamports(),
        programAddress: base58Address(native.owner()) as Address,
        space: BigInt(data.length),
        data,
      } as unknown as PostAccount;
    });
  }
}

/**
 * LiteSVM's simulateTransaction and sendTransaction, given the wire bytes the chain already has.
 * The wrapper takes kit's Transaction and encodes it again with kit's codecs, which give back
 * exactly the bytes the chain decoded it from (test/transaction-bytes.test.ts checks that), so
 * the bytes go to the binding as they came. A send with a missing signature goes through the
 * wrapper, whose refusal of it stands; and should a LiteSVM release move its binding, the
 * wrapper's methods serve.
 */
export function svmTransactions(svm: LiteSVM): {
  simulate: (wire: WireTransaction) => Simulated;
  send: (wire: WireTransaction) => Sent;
} {
  const native = (svm as unknown as { inner?: Record<string, unknown> }).inner;
  const method = (name: string): NativeRun | undefined => {
    const f = native?.[name];
    return typeof f === "function" ? (bytes) => f.call(native, bytes) : undefined;
  };
  const simulateLegacy = method("simulateLegacyTransaction");
  const simulateVersioned = method("simulateVersionedTransaction");
  const sendLegacy = method("sendLegacyTransaction");
  const sendVersioned = method("sendVersionedTransaction");
  if (!simulateLegacy || !simulateVersioned || !sendLegacy || !sendVersioned) {
    return {
      simulate: (wire) => svm.simulateTransaction(wire.transaction),
      send: (wire) => svm.sendTransaction(wire.transaction),
    };
  }
  return {
    simulate(wire) {
      const result = (wire.version === "legacy" ? simulateLegacy : simulateVersioned)(wire.bytes);
      return result instanceof FailedTransactionMetadata
        ? result
        : new SimulatedInfo(result as NativeSimulated);
    },
    send(wire) {
      if (Object.values(wire.transaction.signatures).some((s) => s === null)) {
        return svm.sendTransaction(wire.transaction);
      }
      return (wire.version === "legacy" ? sendLegacy : sendVersioned)(wire.bytes) as Sent;
    },
  };
}
