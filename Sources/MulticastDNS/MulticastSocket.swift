import Foundation
import HADeployCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A UDP socket for multicast DNS: the group 224.0.0.251, port 5353 (RFC 6762 §3). Blocking; owned
/// by one thread at a time.
final class MulticastSocket: @unchecked Sendable {
    static let group = "224.0.0.251"
    static let port: UInt16 = 5353

    let fd: Int32

    /// A socket on `port` (0: any free one). On 5353 it shares the port with every other responder
    /// and browser on this host (SO_REUSEADDR and SO_REUSEPORT, as Avahi and mDNSResponder allow).
    init(port: UInt16) throws {
        let fd = socket(AF_INET, SocketCalls.datagramSocket, 0)
        guard fd >= 0 else { throw Self.failure("socket") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
        var loop: UInt8 = 1
        setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_LOOP, &loop, socklen_t(MemoryLayout<UInt8>.size))
        var ttl: UInt8 = 255
        setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_TTL, &ttl, socklen_t(MemoryLayout<UInt8>.size))
        var address = Self.address("0.0.0.0", port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let error = Self.failure("bind to port \(port)")
            close(fd)
            throw error
        }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Receives the group's messages that arrive on `interface` (an IPv4 address of this host).
    func join(on interface: String) {
        var request = ip_mreq(imr_multiaddr: Self.inAddr(Self.group), imr_interface: Self.inAddr(interface))
        setsockopt(fd, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &request, socklen_t(MemoryLayout<ip_mreq>.size))
    }

    /// Sends `data` to the group through `interface`.
    func sendToGroup(_ data: Data, via interface: String) {
        var outgoing = Self.inAddr(interface)
        setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_IF, &outgoing, socklen_t(MemoryLayout<in_addr>.size))
        send(data, to: Self.address(Self.group, port: Self.port))
    }

    func send(_ data: Data, to destination: sockaddr_in) {
        var destination = destination
        _ = data.withUnsafeBytes { bytes in
            withUnsafePointer(to: &destination) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(
                        fd, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    /// The next datagram and who sent it, or nil when none came within `milliseconds`.
    func receive(within milliseconds: Int) -> (Data, sockaddr_in)? {
        var timeout = PlatformCalls.timeout(milliseconds: max(1, milliseconds))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 9000)
        var source = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let got = withUnsafeMutablePointer(to: &source) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { from in
                buffer.withUnsafeMutableBytes { recvfrom(fd, $0.baseAddress, $0.count, 0, from, &length) }
            }
        }
        guard got > 0 else { return nil }
        return (Data(buffer[0..<got]), source)
    }

    static func address(_ host: String, port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr = inAddr(host)
        return address
    }

    static func inAddr(_ host: String) -> in_addr {
        var value = in_addr()
        _ = inet_pton(AF_INET, host, &value)
        return value
    }

    static func text(of address: in_addr) -> String {
        var address = address
        var buffer = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        _ = inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count))
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func failure(_ what: String) -> MulticastDNSError {
        MulticastDNSError(description: "multicast DNS: \(what) failed: \(SystemErrorText.posix(errno))")
    }
}

public struct MulticastDNSError: Error, CustomStringConvertible, Sendable {
    public let description: String
}
