import { LiteSVM, FailedTransactionMetadata } from "litesvm";
import { generateKeyPairSigner, createTransactionMessage, pipe, setTransactionMessageFeePayerSigner, setTransactionMessageLifetimeUsingBlockhash, appendTransactionMessageInstructions, signTransactionMessageWithSigners, address, getAddressEncoder, AccountRole } from "@solana/kit";
import { getCreateAccountInstruction } from "@solana-program/system";
const svm = new LiteSVM();
const payer = await generateKeyPairSigner(); const vote = await generateKeyPairSigner(); const node = await generateKeyPairSigner();
svm.airdrop(payer.address, 10_000_000_000n);
const VOTE = address("Vote111111111111111111111111111111111111111");
const size = 3762n;
const data = new Uint8Array(4 + 32*3 + 1); const enc = getAddressEncoder();
data.set(enc.encode(node.address), 4); data.set(enc.encode(payer.address), 36); data.set(enc.encode(payer.address), 68); data[100] = 7;
const msg = pipe(createTransactionMessage({ version: 0 }), (m) => setTransactionMessageFeePayerSigner(payer, m),
  (m) => setTransactionMessageLifetimeUsingBlockhash({ blockhash: svm.latestBlockhash() as any, lastValidBlockHeight: 100n }, m),
  (m) => appendTransactionMessageInstructions([getCreateAccountInstruction({ payer, newAccount: vote, lamports: svm.minimumBalanceForRentExemption(size), space: size, programAddress: VOTE }),
    { programAddress: VOTE, accounts: [{address: vote.address, role: AccountRole.WRITABLE}, {address: address("SysvarRent111111111111111111111111111111111"), role: AccountRole.READONLY}, {address: address("SysvarC1ock11111111111111111111111111111111"), role: AccountRole.READONLY}, {address: node.address, role: AccountRole.READONLY_SIGNER, signer: node} as any], data }], m));
const tx = await signTransactionMessageWithSigners(msg);
const r = svm.sendTransaction(tx);
if (r instanceof FailedTransactionMetadata) console.log("failed", r.err(), r.meta().logs());
const a = svm.getAccount(vote.address);
console.log(Buffer.from(a.data as Uint8Array).subarray(0, 120).toString("hex"), (a.data as Uint8Array).length);
