import { BlockList, isIP } from "node:net";

/** Where an address lies: this machine, a local or private network, or the public internet. */
export type AddressClass = "loopback" | "private" | "link_local" | "unspecified" | "multicast" | "reserved" | "public";

const RANGES: readonly (readonly [AddressClass, string, number, "ipv4" | "ipv6"])[] = [
  ["unspecified", "0.0.0.0", 8, "ipv4"],
  ["loopback", "127.0.0.0", 8, "ipv4"],
  ["private", "10.0.0.0", 8, "ipv4"],
  ["private", "172.16.0.0", 12, "ipv4"],
  ["private", "192.168.0.0", 16, "ipv4"],
  // Carrier-grade NAT: a provider's private space.
  ["private", "100.64.0.0", 10, "ipv4"],
  ["link_local", "169.254.0.0", 16, "ipv4"],
  ["reserved", "192.0.0.0", 24, "ipv4"],
  ["reserved", "198.18.0.0", 15, "ipv4"],
  ["multicast", "224.0.0.0", 4, "ipv4"],
  // 240/4 and the broadcast address.
  ["reserved", "240.0.0.0", 4, "ipv4"],
  ["unspecified", "::", 128, "ipv6"],
  ["loopback", "::1", 128, "ipv6"],
  ["private", "fc00::", 7, "ipv6"],
  ["link_local", "fe80::", 10, "ipv6"],
  ["multicast", "ff00::", 8, "ipv6"],
];

const LISTS = new Map<AddressClass, BlockList>();
for (const [kind, network, prefix, family] of RANGES) {
  const list = LISTS.get(kind) ?? new BlockList();
  list.addSubnet(network, prefix, family);
  LISTS.set(kind, list);
}

/** The class of an IP address (IPv4-mapped and NAT64-free IPv6 forms read as their IPv4); `reserved` for what is not an address. */
export function addressClass(address: string): AddressClass {
  const bare = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  const family = isIP(bare);
  if (family === 0) return "reserved";
  const mapped = family === 6 ? mappedIpv4(bare) : null;
  const [ip, type] = mapped ? [mapped, "ipv4" as const] : [bare, family === 4 ? ("ipv4" as const) : ("ipv6" as const)];
  for (const [kind, list] of LISTS) if (list.check(ip, type)) return kind;
  return "public";
}

/** `::ffff:127.0.0.1` (or `::ffff:7f00:1`) as `127.0.0.1`; null when the address is not IPv4-mapped. */
function mappedIpv4(ipv6: string): string | null {
  const lower = ipv6.toLowerCase();
  const dotted = /^(?:0{0,4}:){0,5}:?ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower) ?? /^::(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return isIP(dotted[1]!) === 4 ? dotted[1]! : null;
  const hex = /^(?:0{0,4}:){0,5}:?ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (!hex) return null;
  const high = Number.parseInt(hex[1]!, 16);
  const low = Number.parseInt(hex[2]!, 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

export function isPublicAddress(address: string): boolean {
  return addressClass(address) === "public";
}
