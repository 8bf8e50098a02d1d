import type { Socket } from "node:net";
import { Duplex } from "node:stream";

/**
 * A duplex over `socket` that first yields `head`, bytes already read from the socket.
 *
 * Node's http2 server reads straight from a net.Socket's native handle, so bytes consumed while
 * sniffing the protocol cannot be `unshift`ed back; handing http2 this wrapper instead replays
 * them. (Node wraps a non-native stream in its JS stream adapter, which costs a little per frame
 * and is the price of serving HTTP/1.1 and h2c on one port.)
 */
export function createReplaySocket(socket: Socket, head: Buffer): Duplex {
  const duplex = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk, encoding, callback) {
      socket.write(chunk, encoding, callback);
    },
    final(callback) {
      socket.end(callback);
    },
    destroy(error, callback) {
      socket.destroy(error ?? undefined);
      callback(error);
    },
  });
  duplex.push(head);
  socket.on("data", (chunk) => {
    if (!duplex.push(chunk)) socket.pause();
  });
  socket.on("end", () => duplex.push(null));
  socket.on("error", (error) => duplex.destroy(error));
  socket.on("close", () => duplex.destroy());
  // Properties http2 and logs read from the transport.
  Object.defineProperties(duplex, {
    remoteAddress: { get: () => socket.remoteAddress },
    remotePort: { get: () => socket.remotePort },
    remoteFamily: { get: () => socket.remoteFamily },
    localAddress: { get: () => socket.localAddress },
    localPort: { get: () => socket.localPort },
  });
  return duplex;
}
