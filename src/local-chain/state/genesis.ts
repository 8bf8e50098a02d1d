import { getMetadataAccountDataSerializer } from "@metaplex-foundation/mpl-token-metadata/dist/src/generated/accounts/metadata.js";
import {
  type Address,
  address,
  appendTransactionMessageInstructions,
  type Blockhash,
  compileTransaction,
  createNoopSigner,
  createTransactionMessage,
  getAddressEncoder,
  getProgramDerivedAddress,
  getTransactionEncoder,
  type Instruction,
  none,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  some,
  type Transaction,
} from "@solana/kit";
import { getTransferSolInstruction } from "@solana-program/system";
import {
  AccountState,
  findAssociatedTokenPda,
  getBurnCheckedInstruction,
  getMintEncoder,
  getMintToCheckedInstruction,
  getSyncNativeInstruction,
  getTokenEncoder,
  getTransferCheckedInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from "@solana-program/token";
import type { Catalog } from "../../token/catalog.ts";
import { createBlockClock } from "../runtime/block-clock.ts";
import { createLedger } from "../runtime/ledger.ts";
import { createLocalChain, createSvm } from "../runtime/local-chain.ts";
import type { ChainState } from "./chain-state.ts";
import { type LocalKey, localKey } from "./local-keys.ts";

const NATIVE_MINT = "So11111111111111111111111111111111111111112";
const METAPLEX_PROGRAM = address("metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s");
const SYSTEM_PROGRAM = address("11111111111111111111111111111111");
const LAMPORTS_PER_SOL = 1_000_000_000n;
/** How far back the seeded history reaches, in slots: a day at Solana's 400 ms. */
export const HISTORY_SLOTS = 216_000;
/** Bumped whenever what the genesis holds changes, so cached genesis files are made anew. */
export const GENESIS_VERSION = 5;
const TRANSFERS_PER_MINT = 150;
const BURNS_PER_MINT = 3;
const SWAPS_PER_PAIR = 4;
const WALLETS = 6;

/**
 * The genesis's keys: all derived from fixed names (see local-keys.ts), so public. None of them
 * holds a pool or a mint's powers on a chain that serves: those are the chain's own keys, from its
 * random seed (chain-keys.ts, install-chain-keys.ts).
 */
export const LOCAL_KEYS = {
  /** Pays airdrops (requestAirdrop). */
  faucet: localKey("faucet"),
  /**
   * Signs the seeded history's mints. A chain moves the mints' powers from it to its own
   * authority before it serves (install-chain-keys.ts), so this key can do nothing there.
   */
  authority: localKey("token authority"),
  /** The wallets the seeded history moves tokens between. */
  wallets: Array.from({ length: WALLETS }, (_, i) => localKey(`wallet ${i + 1}`)),
} as const;

/**
 * Makes the local chain's genesis: the catalog's tokens at their real mint addresses, with their
 * real decimals and Metaplex metadata accounts in the real layout (the Metaplex program itself
 * need not be present to read them), wallets holding each token, and a day of real transactions
 * between the wallets, executed by LiteSVM: per token, mints (or, for wrapped SOL, deposits),
 * {@link TRANSFERS_PER_MINT} transfers, burns, and swaps with the next token. Everything is
 * derived from fixed seeds, so every machine makes the same chain, signatures included: the
 * genesis is public, and holds no pool and no secret. A chain made from it gets its keys, its
 * pools and its mints' authority from a random seed of its own (install-chain-keys.ts).
 *
 * The history spans slots 1 to {@link HISTORY_SLOTS}; times are the clock's business, so whoever
 * loads the genesis decides when it happened (see ../start-local-chain.ts).
 */
export async function createGenesis(options: { catalog: Catalog; slotMs: number }): Promise<ChainState> {
  const svm = createSvm();
  let seedSlot = 0;
  const clock = createBlockClock({
    state: { genesisMs: 0, slotMs: options.slotMs, slot: 0, blockhashes: [[svm.latestBlockhash(), 0]] },
    now: () => seedSlot * options.slotMs,
  });
  const chain = createLocalChain({ svm, clock, ledger: createLedger(), faucet: LOCAL_KEYS.faucet });
  const rent = (size: number) => svm.minimumBalanceForRentExemption(BigInt(size));
  const setAccount = (at: Address, owner: Address, data: Uint8Array, lamports = rent(data.length)) =>
    chain.setAccount(at, { lamports, programAddress: owner, data, executable: false });

  const { faucet, authority, wallets } = LOCAL_KEYS;
  setAccount(faucet.address, SYSTEM_PROGRAM, new Uint8Array(), 500_000_000n * LAMPORTS_PER_SOL);
  setAccount(authority.address, SYSTEM_PROGRAM, new Uint8Array(), 1_000n * LAMPORTS_PER_SOL);
  for (const wallet of wallets)
    setAccount(wallet.address, SYSTEM_PROGRAM, new Uint8Array(), 1_000n * LAMPORTS_PER_SOL);

  const tokens = options.catalog.tokens.map((t) => ({ ...t, mint: address(t.mint) }));
  const metadata = getMetadataAccountDataSerializer();
  const addressBytes = getAddressEncoder();
  const accounts = new Map<string, Address>();
  const ata = (owner: Address, mint: Address) => accounts.get(`${owner}/${mint}`) as Address;
  for (const token of tokens) {
    const native = token.mint === NATIVE_MINT;
    const mint = getMintEncoder().encode({
      mintAuthority: native ? none() : some(authority.address),
      supply: 0n,
      decimals: token.decimals,
      isInitialized: true,
      // No freeze authority: no agent needs one, and a key that can freeze can halt any holder.
      freezeAuthority: none(),
    }) as Uint8Array;
    // Agave's genesis holds the native mint with 1 SOL (solana-genesis and the test validator add it
    // so); Token-2022's native mint is absent until someone creates it (CreateNativeMint).
    setAccount(token.mint, TOKEN_PROGRAM_ADDRESS, mint, native ? LAMPORTS_PER_SOL : rent(mint.length));
    const [pda] = await getProgramDerivedAddress({
      programAddress: METAPLEX_PROGRAM,
      seeds: ["metadata", addressBytes.encode(METAPLEX_PROGRAM), addressBytes.encode(token.mint)],
    });
    const data = metadata.serialize({
      updateAuthority: authority.address,
      mint: token.mint,
      name: token.name,
      symbol: token.symbol,
      uri: "",
      sellerFeeBasisPoints: 0,
      creators: { __option: "None" },
      primarySaleHappened: false,
      isMutable: true,
      editionNonce: { __option: "None" },
      tokenStandard: { __option: "Some", value: 2 }, // Fungible
      collection: { __option: "None" },
      uses: { __option: "None" },
      collectionDetails: { __option: "None" },
      programmableConfig: { __option: "None" },
    } as unknown as Parameters<typeof metadata.serialize>[0]);
    setAccount(pda, METAPLEX_PROGRAM, data);
    for (const wallet of wallets) {
      const [account] = await findAssociatedTokenPda({
        owner: wallet.address,
        mint: token.mint,
        tokenProgram: TOKEN_PROGRAM_ADDRESS,
      });
      accounts.set(`${wallet.address}/${token.mint}`, account);
      const reserve = rent(165);
      const tokenData = getTokenEncoder().encode({
        mint: token.mint,
        owner: wallet.address,
        amount: 0n,
        delegate: none(),
        state: AccountState.Initialized,
        isNative: native ? some(reserve) : none(),
        delegatedAmount: 0n,
        closeAuthority: none(),
      }) as Uint8Array;
      setAccount(account, TOKEN_PROGRAM_ADDRESS, tokenData, reserve);
    }
  }

  // The history: what happens, in order, each in its slot.
  const random = mulberry32(20261124);
  const between = (low: number, high: number) => low + Math.floor(random() * (high - low + 1));
  const units = (decimals: number, maxWhole: number) =>
    BigInt(between(1, maxWhole * 10 ** Math.min(decimals, 9)));
  type Step = { slot: number; payer: LocalKey; signers: LocalKey[]; instructions: Instruction[] };
  const steps: Step[] = [];
  const opening = tokens.length * wallets.length;
  let openingSlot = 0;
  for (const token of tokens) {
    for (const wallet of wallets) {
      const slot = 1 + Math.floor((openingSlot++ * 10) / opening);
      const target = ata(wallet.address, token.mint);
      if (token.mint === NATIVE_MINT) {
        steps.push({
          slot,
          payer: wallet,
          signers: [wallet],
          instructions: [
            getTransferSolInstruction({
              source: createNoopSigner(wallet.address),
              destination: target,
              amount: 200n * LAMPORTS_PER_SOL,
            }),
            getSyncNativeInstruction({ account: target }),
          ],
        });
      } else {
        steps.push({
          slot,
          payer: authority,
          signers: [authority],
          instructions: [
            getMintToCheckedInstruction({
              mint: token.mint,
              token: target,
              mintAuthority: createNoopSigner(authority.address),
              amount: 1_000_000n * 10n ** BigInt(token.decimals),
              decimals: token.decimals,
            }),
          ],
        });
      }
    }
  }
  const later = () => between(20, HISTORY_SLOTS);
  const pick = () => {
    const from = between(0, wallets.length - 1);
    const to = (from + between(1, wallets.length - 1)) % wallets.length;
    return [wallets[from] as LocalKey, wallets[to] as LocalKey] as const;
  };
  const transfer = (token: (typeof tokens)[number], from: LocalKey, to: LocalKey, maxWhole: number) =>
    getTransferCheckedInstruction({
      source: ata(from.address, token.mint),
      mint: token.mint,
      destination: ata(to.address, token.mint),
      authority: createNoopSigner(from.address),
      amount: units(token.decimals, maxWhole),
      decimals: token.decimals,
    });
  tokens.forEach((token, i) => {
    const native = token.mint === NATIVE_MINT;
    for (let n = 0; n < TRANSFERS_PER_MINT; n++) {
      const [from, to] = pick();
      steps.push({
        slot: later(),
        payer: from,
        signers: [from],
        instructions: [transfer(token, from, to, native ? 2 : 5000)],
      });
    }
    // Burning the native mint is not allowed: wrapped SOL is unwrapped by closing instead.
    for (let n = 0; n < (native ? 0 : BURNS_PER_MINT); n++) {
      const [owner] = pick();
      steps.push({
        slot: later(),
        payer: owner,
        signers: [owner],
        instructions: [
          getBurnCheckedInstruction({
            account: ata(owner.address, token.mint),
            mint: token.mint,
            authority: createNoopSigner(owner.address),
            amount: units(token.decimals, 100),
            decimals: token.decimals,
          }),
        ],
      });
    }
    const other = tokens[(i + 1) % tokens.length] as (typeof tokens)[number];
    for (let n = 0; n < SWAPS_PER_PAIR; n++) {
      const [x, y] = pick();
      steps.push({
        slot: later(),
        payer: x,
        signers: [x, y],
        instructions: [
          transfer(token, x, y, native ? 2 : 500),
          transfer(other, y, x, other.mint === NATIVE_MINT ? 2 : 500),
        ],
      });
    }
  });
  steps.sort((a, b) => a.slot - b.slot);

  const encoder = getTransactionEncoder();
  for (const step of steps) {
    seedSlot = step.slot;
    chain.tick();
    const { blockhash } = chain.latestBlockhash("processed");
    const compiled = compileTransaction(
      pipe(
        createTransactionMessage({ version: 0 }),
        (m) => setTransactionMessageFeePayerSigner(createNoopSigner(step.payer.address), m),
        (m) =>
          setTransactionMessageLifetimeUsingBlockhash(
            { blockhash: blockhash as Blockhash, lastValidBlockHeight: 0n },
            m,
          ),
        (m) => appendTransactionMessageInstructions(step.instructions, m),
      ),
    );
    const message = compiled.messageBytes as unknown as Uint8Array;
    const signatures = Object.fromEntries(
      Object.keys(compiled.signatures).map((signer) => [
        signer,
        (step.signers.find((k) => k.address === signer) as LocalKey).sign(message),
      ]),
    );
    const bytes = encoder.encode({ ...compiled, signatures } as unknown as Transaction) as Uint8Array;
    const outcome = chain.send(bytes, { skipPreflight: true });
    const landed = outcome.kind === "sent" ? chain.transaction(outcome.signature, "processed") : undefined;
    if (landed === undefined || landed.err !== null) {
      throw new Error(
        `genesis: a seeded transaction did not land (${JSON.stringify(landed?.err ?? outcome.kind)})`,
      );
    }
  }
  seedSlot = HISTORY_SLOTS;
  chain.tick();
  return { accounts: chain.savedAccounts(), clock: clock.state(), ledger: chain.ledger.entries() };
}

/** mulberry32: a small, well-mixed 32-bit PRNG; fixed, so the genesis is the same everywhere. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}
