/**
 * The server name (SNI) a TLS ClientHello asks for, read from the first bytes a client sends through a CONNECT tunnel,
 * so the proxy can refuse a tunnel whose TLS names another host than the one it was asked for. Written here: no
 * maintained package reads a ClientHello without terminating TLS, and this reads only the few fields on the way to
 * the extension, bounds-checked at every step. It never throws and never reads past `bytes`.
 */
export type ClientHelloRead =
  | { readonly kind: "sni"; readonly name: string }
  /** A ClientHello without a server_name extension (an IP literal, an old client). */
  | { readonly kind: "no_sni" }
  /** Maybe a ClientHello, not whole yet: wait for more bytes. */
  | { readonly kind: "incomplete" }
  /** Not TLS (plain text through the tunnel, another protocol), or a malformed hello. */
  | { readonly kind: "not_tls" };

/** The most bytes waited for: a ClientHello with post-quantum key shares is ~2 KiB, a record at most 16 KiB. */
export const CLIENT_HELLO_MAX_BYTES = 64 * 1024;

const HANDSHAKE = 0x16;
const CLIENT_HELLO = 0x01;
const SERVER_NAME = 0x0000;
const HOST_NAME = 0x00;

export function serverNameOf(bytes: Buffer): ClientHelloRead {
  if (bytes.length === 0) return { kind: "incomplete" };
  if (bytes[0] !== HANDSHAKE) return { kind: "not_tls" };
  // The handshake message may span records: join their payloads until the hello is whole.
  const payload: Buffer[] = [];
  let offset = 0;
  while (offset + 5 <= bytes.length) {
    if (bytes[offset] !== HANDSHAKE || bytes[offset + 1] !== 0x03) return { kind: "not_tls" };
    const length = bytes.readUInt16BE(offset + 3);
    if (length === 0 || length > 16_384) return { kind: "not_tls" };
    const available = Math.min(length, bytes.length - offset - 5);
    payload.push(bytes.subarray(offset + 5, offset + 5 + available));
    offset += 5 + available;
    const hello = helloIn(Buffer.concat(payload));
    if (hello.kind !== "incomplete" || available < length) return hello;
  }
  return bytes.length >= CLIENT_HELLO_MAX_BYTES ? { kind: "not_tls" } : { kind: "incomplete" };
}

/** The ClientHello in the joined handshake payload, once it is whole. */
function helloIn(handshake: Buffer): ClientHelloRead {
  if (handshake.length < 4) return { kind: "incomplete" };
  if (handshake[0] !== CLIENT_HELLO) return { kind: "not_tls" };
  const needed = 4 + handshake.readUIntBE(1, 3);
  if (needed > CLIENT_HELLO_MAX_BYTES) return { kind: "not_tls" };
  return handshake.length < needed ? { kind: "incomplete" } : readHello(handshake.subarray(4, needed));
}

/** The ClientHello body: version, random, session id, cipher suites, compression methods, then the extensions. */
function readHello(hello: Buffer): ClientHelloRead {
  let at = 2 + 32;
  const skip = (lengthBytes: 1 | 2): boolean => {
    if (at + lengthBytes > hello.length) return false;
    const length = lengthBytes === 1 ? hello[at]! : hello.readUInt16BE(at);
    at += lengthBytes + length;
    return at <= hello.length;
  };
  if (!skip(1) || !skip(2) || !skip(1)) return { kind: "not_tls" };
  if (at === hello.length) return { kind: "no_sni" };
  if (at + 2 > hello.length) return { kind: "not_tls" };
  const end = at + 2 + hello.readUInt16BE(at);
  if (end > hello.length) return { kind: "not_tls" };
  at += 2;
  while (at + 4 <= end) {
    const type = hello.readUInt16BE(at);
    const length = hello.readUInt16BE(at + 2);
    const data = at + 4;
    if (data + length > end) return { kind: "not_tls" };
    if (type === SERVER_NAME) return readServerName(hello.subarray(data, data + length));
    at = data + length;
  }
  return { kind: "no_sni" };
}

function readServerName(extension: Buffer): ClientHelloRead {
  if (extension.length < 2) return { kind: "not_tls" };
  const end = Math.min(extension.length, 2 + extension.readUInt16BE(0));
  let at = 2;
  while (at + 3 <= end) {
    const type = extension[at]!;
    const length = extension.readUInt16BE(at + 1);
    if (at + 3 + length > end) return { kind: "not_tls" };
    if (type === HOST_NAME) return { kind: "sni", name: extension.subarray(at + 3, at + 3 + length).toString("latin1") };
    at += 3 + length;
  }
  return { kind: "no_sni" };
}
