import { address, getAddressEncoder, getProgramDerivedAddress, isSome, none, some } from "@solana/kit";
import { getMintDecoder, getMintEncoder, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import type { Catalog } from "../../token/catalog.ts";
import { localPools, seedLocalPools } from "../pools/local-pools.ts";
import type { LocalChain } from "../runtime/local-chain.ts";
import type { ChainKeys } from "./chain-keys.ts";

const METAPLEX_PROGRAM = address("metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s");
const MINT_SIZE = 82;
/** Where a Metaplex metadata account keeps its update authority: after its one-byte key. */
const UPDATE_AUTHORITY_OFFSET = 1;

/**
 * Gives a chain that has no keys of its own yet (one starting from the genesis, or from a state
 * file saved before chains had them) its keys: its pools, owned by `keys`' pool keys and seeded
 * at the catalog's prices, and the catalog mints' powers that `genesisAuthority` held (the
 * genesis's public key, which signed its history's mints) moved to `keys.authority`: mint and
 * metadata update authority to it, and no freeze authority at all, as no agent needs one. Before
 * the chain serves anyone, so no client ever sees a mint or a pool a public key controls.
 */
export async function installChainKeys(
  chain: Pick<LocalChain, "account" | "setAccount" | "rentExemption">,
  options: { readonly catalog: Catalog; readonly keys: ChainKeys; readonly genesisAuthority: string },
): Promise<void> {
  const { keys, genesisAuthority } = options;
  const encoder = getAddressEncoder();
  const authorityBytes = encoder.encode(keys.authority.address);
  for (const token of options.catalog.tokens) {
    const mint = chain.account(token.mint);
    if (mint === undefined || mint.programAddress !== TOKEN_PROGRAM_ADDRESS || mint.data.length !== MINT_SIZE)
      continue;
    const state = getMintDecoder().decode(mint.data);
    const heldByGenesis = (authority: typeof state.mintAuthority) =>
      isSome(authority) && authority.value === genesisAuthority;
    if (heldByGenesis(state.mintAuthority) || heldByGenesis(state.freezeAuthority)) {
      chain.setAccount(token.mint, {
        ...mint,
        data: getMintEncoder().encode({
          ...state,
          mintAuthority: heldByGenesis(state.mintAuthority)
            ? some(keys.authority.address)
            : state.mintAuthority,
          freezeAuthority: heldByGenesis(state.freezeAuthority) ? none() : state.freezeAuthority,
        }) as Uint8Array,
      });
    }
    const [pda] = await getProgramDerivedAddress({
      programAddress: METAPLEX_PROGRAM,
      seeds: ["metadata", encoder.encode(METAPLEX_PROGRAM), encoder.encode(address(token.mint))],
    });
    const metadata = chain.account(pda);
    if (metadata === undefined || metadata.programAddress !== METAPLEX_PROGRAM) continue;
    const data = new Uint8Array(metadata.data);
    const held = data.subarray(UPDATE_AUTHORITY_OFFSET, UPDATE_AUTHORITY_OFFSET + 32);
    if (Buffer.from(held).equals(Buffer.from(encoder.encode(address(genesisAuthority))))) {
      data.set(authorityBytes, UPDATE_AUTHORITY_OFFSET);
      chain.setAccount(pda, { ...metadata, data });
    }
  }
  seedLocalPools(chain, await localPools(options.catalog, keys));
}
