import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The C spellings this target needs that differ between Linux (Glibc) and macOS (Darwin), in one
/// place (scripts/platform-lint.sh).
enum PlatformCalls {
    /// This host's IPv4 interface addresses that can carry multicast DNS: up, and multicast-capable or
    /// the loopback (where twins and local responders answer), loopback first.
    static func multicastInterfaces() -> [String] {
        var first: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&first) == 0 else { return ["127.0.0.1"] }
        defer { freeifaddrs(first) }
        let (up, multicast, loopback) = (UInt32(IFF_UP), UInt32(IFF_MULTICAST), UInt32(IFF_LOOPBACK))
        var found: [String] = []
        var cursor = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            let flags = UInt32(entry.pointee.ifa_flags)
            guard flags & up != 0, flags & (multicast | loopback) != 0,
                let address = entry.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET)
            else { continue }
            let text = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                MulticastSocket.text(of: $0.pointee.sin_addr)
            }
            if found.contains(text) { continue }
            if flags & loopback != 0 { found.insert(text, at: 0) } else { found.append(text) }
        }
        return found.isEmpty ? ["127.0.0.1"] : found
    }

    /// A receive timeout as `SO_RCVTIMEO` takes it.
    static func timeout(milliseconds: Int) -> timeval {
        timeval(tv_sec: milliseconds / 1000, tv_usec: suseconds_t((milliseconds % 1000) * 1000))
    }
}
