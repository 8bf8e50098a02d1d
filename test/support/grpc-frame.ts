/** A gRPC length-prefixed message (flags, 4-byte big-endian length, payload), as clients frame them. */
export function grpcFrame(payload: Uint8Array, flags = 0): Buffer {
  const out = Buffer.alloc(5 + payload.length);
  out[0] = flags;
  out.writeUInt32BE(payload.length, 1);
  out.set(payload, 5);
  return out;
}
