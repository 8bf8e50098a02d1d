/**
 * A wallet's view of a Solana JSON-RPC endpoint, as tests use it: @solana/kit's own client for
 * everything a wallet does (airdrops, building, signing and sending transactions, reading
 * statuses), and raw JSON-RPC for what kit has no typed method for (surfpool's cheatcodes).
 */
import { randomBytes } from "node:crypto";
import {
  type Address,
  appendTransactionMessageInstructions,
  type BlockhashLifetimeConstraint,
  createSolanaRpc,
  createTransactionMessage,
  getAddressDecoder,
  getBase64EncodedWireTransaction,
  type Instruction,
  lamports,
  pipe,
  type Signature,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
  type TransactionSigner,
} from "@solana/kit";
import { getMintEncoder, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";

export type ChainClient = ReturnType<typeof createChainClient>;

/**
 * A v0 transaction from `payer` with `instructions` on `blockhash`, signed by the fee payer and
 * every signer the instructions name, not sent. The chain client's send builds with it, and so do
 * the tests and benches that need a transaction's signature before sending it (PubSub) or send it
 * through kit's own factories: one builder, so they all send the same kind of transaction.
 */
export function signedTransaction(
  payer: TransactionSigner,
  blockhash: BlockhashLifetimeConstraint,
  instructions: readonly Instruction[],
) {
  return pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(payer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(blockhash, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
    (m) => signTransactionMessageWithSigners(m),
  );
}

/**
 * `whileWaiting` runs at each poll of `confirm`: a test that drives the chain's clock moves it
 * there, as the working slot a transaction lands in is confirmed only once the next slot comes.
 */
export function createChainClient(url: string, options: { whileWaiting?: () => void } = {}) {
  const rpc = createSolanaRpc(url);
  let id = 0;

  /** One raw JSON-RPC call: the whole response object, `result` or `error`. */
  const raw = async (method: string, params: unknown[] = []): Promise<Record<string, unknown>> => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params }),
    });
    return (await response.json()) as Record<string, unknown>;
  };

  /** Waits until the signature is confirmed (or failed); throws after `timeoutMs`. */
  const confirm = async (signature: Signature, timeoutMs = 10_000) => {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const { value } = await rpc.getSignatureStatuses([signature]).send();
      const status = value[0];
      if (status !== null && status !== undefined && status.confirmationStatus !== "processed") return status;
      if (Date.now() > until) throw new Error(`${signature} was not confirmed within ${timeoutMs} ms`);
      options.whileWaiting?.();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  /** Builds and signs a v0 transaction (signedTransaction) on the latest blockhash; does not send it. */
  const sign = async (
    payer: TransactionSigner,
    instructions: readonly Instruction[],
    blockhashCommitment: "confirmed" | "finalized" = "confirmed",
  ) => {
    const { value: blockhash } = await rpc.getLatestBlockhash({ commitment: blockhashCommitment }).send();
    return signedTransaction(payer, blockhash, instructions);
  };

  /** Builds, signs (fee payer and every signer the instructions name) and sends a v0 transaction. */
  const send = async (
    payer: TransactionSigner,
    instructions: readonly Instruction[],
    options: { skipPreflight?: boolean; blockhashCommitment?: "confirmed" | "finalized" } = {},
  ): Promise<Signature> => {
    const transaction = await sign(payer, instructions, options.blockhashCommitment);
    return rpc
      .sendTransaction(getBase64EncodedWireTransaction(transaction), {
        encoding: "base64",
        preflightCommitment: "confirmed",
        skipPreflight: options.skipPreflight ?? false,
      })
      .send();
  };

  return {
    rpc,
    raw,
    confirm,
    sign,
    send,
    /** Sends and waits for confirmation; throws when the transaction failed. */
    async sendAndConfirm(payer: TransactionSigner, instructions: readonly Instruction[]): Promise<Signature> {
      const signature = await send(payer, instructions);
      const status = await confirm(signature);
      if (status.err !== null) throw new Error(`${signature} failed: ${JSON.stringify(status.err)}`);
      return signature;
    },
    async airdrop(to: Address, sol: bigint): Promise<void> {
      await confirm(await rpc.requestAirdrop(to, lamports(sol * 1_000_000_000n)).send());
    },
    /** surfpool's cheatcode: sets `owner`'s associated token account for `mint` to `amount` base units. */
    async setTokenBalance(
      owner: Address,
      mint: Address,
      amount: bigint,
      tokenProgram?: Address,
    ): Promise<void> {
      const params: unknown[] = [owner, mint, { amount: Number(amount) }];
      if (tokenProgram !== undefined) params.push(tokenProgram);
      const response = await raw("surfnet_setTokenAccount", params);
      if ("error" in response) throw new Error(`surfnet_setTokenAccount: ${JSON.stringify(response.error)}`);
    },
    /**
     * A new SPL Token mint of `decimals`, written straight onto the chain with the
     * surfnet_setAccount cheatcode (a random address, authorities no one holds, 10^15 supply):
     * the Jupiter-shaped server's tests and bench need mints no catalog token is.
     */
    async createMint(decimals: number): Promise<Address> {
      const randomAddress = (): Address => getAddressDecoder().decode(randomBytes(32));
      const mint = randomAddress();
      const data = getMintEncoder().encode({
        mintAuthority: randomAddress(),
        supply: 10n ** 15n,
        decimals,
        isInitialized: true,
        freezeAuthority: null,
      });
      const response = await raw("surfnet_setAccount", [
        mint,
        { lamports: 1_461_600, data: Buffer.from(data).toString("hex"), owner: TOKEN_PROGRAM_ADDRESS },
      ]);
      if ("error" in response) throw new Error(`surfnet_setAccount: ${JSON.stringify(response.error)}`);
      return mint;
    },
  };
}
