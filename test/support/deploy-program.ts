/**
 * Deploys a program on a chain as a cluster does, through the upgradeable loader's own
 * transactions (a buffer written, then DeployWithMaxDataLen): the local chain's cheatcodes make no
 * programs (src/local-chain/cheatcodes/cheatcode-refusal.ts). The program's address is its key's, so a test
 * that must name it before the chain starts (SWAP_ALLOWED_PROGRAMS) derives the key from a fixed
 * seed. Deploying twice to one chain deploys once.
 */
import {
  AccountRole,
  type Address,
  address,
  createKeyPairSignerFromBytes,
  generateKeyPairSigner,
  getAddressEncoder,
  getProgramDerivedAddress,
  type Instruction,
} from "@solana/kit";
import { getCreateAccountInstruction } from "@solana-program/system";
import type { LocalKey } from "../../src/local-chain/index.ts";
import { createChainClient } from "./chain-client.ts";

const LOADER = address("BPFLoaderUpgradeab1e11111111111111111111111");
/** UpgradeableLoaderState's sizes: a buffer's header (before the bytes), a program account. */
const BUFFER_HEADER = 37;
const PROGRAM_SIZE = 36;

export async function deployProgram(rpcUrl: string, elf: Uint8Array, programKey: LocalKey): Promise<void> {
  const chain = createChainClient(rpcUrl);
  const existing = await chain.rpc.getAccountInfo(programKey.address, { encoding: "base64" }).send();
  if (existing.value?.executable === true) return;
  const program = await createKeyPairSignerFromBytes(programKey.keypairBytes);
  const [payer, buffer] = [await generateKeyPairSigner(), await generateKeyPairSigner()];
  await chain.airdrop(payer.address, 10n);
  const rent = (size: number) => chain.rpc.getMinimumBalanceForRentExemption(BigInt(size)).send();
  const loader = (accounts: Instruction["accounts"], data: Buffer): Instruction => ({
    programAddress: LOADER,
    accounts,
    data: new Uint8Array(data),
  });
  const u32 = (n: number) => Buffer.from(new Uint32Array([n]).buffer);
  const u64 = (n: number) => Buffer.from(new BigUint64Array([BigInt(n)]).buffer);
  const signer = (s: typeof payer, role: AccountRole) => ({ address: s.address, role, signer: s });
  const account = (at: Address, role: AccountRole) => ({ address: at, role });
  await chain.sendAndConfirm(payer, [
    getCreateAccountInstruction({
      payer,
      newAccount: buffer,
      lamports: await rent(BUFFER_HEADER + elf.length),
      space: BUFFER_HEADER + elf.length,
      programAddress: LOADER,
    }),
    // InitializeBuffer (0), then Write (1) at offset 0, both with the payer as the authority.
    loader(
      [account(buffer.address, AccountRole.WRITABLE), account(payer.address, AccountRole.READONLY)],
      u32(0),
    ),
    loader(
      [account(buffer.address, AccountRole.WRITABLE), signer(payer, AccountRole.READONLY_SIGNER)],
      Buffer.concat([u32(1), u32(0), u64(elf.length), Buffer.from(elf)]),
    ),
  ]);
  const [programData] = await getProgramDerivedAddress({
    programAddress: LOADER,
    seeds: [getAddressEncoder().encode(program.address)],
  });
  await chain.sendAndConfirm(payer, [
    getCreateAccountInstruction({
      payer,
      newAccount: program,
      lamports: await rent(PROGRAM_SIZE),
      space: PROGRAM_SIZE,
      programAddress: LOADER,
    }),
    // DeployWithMaxDataLen (2).
    loader(
      [
        signer(payer, AccountRole.WRITABLE_SIGNER),
        account(programData, AccountRole.WRITABLE),
        account(program.address, AccountRole.WRITABLE),
        account(buffer.address, AccountRole.WRITABLE),
        account(address("SysvarRent111111111111111111111111111111111"), AccountRole.READONLY),
        account(address("SysvarC1ock11111111111111111111111111111111"), AccountRole.READONLY),
        account(address("11111111111111111111111111111111"), AccountRole.READONLY),
        signer(payer, AccountRole.READONLY_SIGNER),
      ],
      Buffer.concat([u32(2), u64(elf.length)]),
    ),
  ]);
}
