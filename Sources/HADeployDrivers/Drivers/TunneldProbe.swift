import Foundation
import HADeployCore

/// What pymobiledevice3's `tunneld` says about iOS 17+ tunnels.
public enum TunneldState: Sendable, Hashable {
    /// Nothing answers (or not with tunneld's JSON).
    case notRunning(reason: String)
    /// The UDIDs it has a tunnel to.
    case running(udids: Set<String>)
}

/// Asks tunneld which devices it has tunnels to.
public protocol TunneldProbing: Sendable {
    var address: String { get }
    func state() async -> TunneldState
}

/// Asks the real tunneld over HTTP (`GET /` on 127.0.0.1:49151, its default).
///
/// A plain socket with `poll` deadlines on a background queue, not URLSession: on Linux a URLSession
/// completion that never comes cannot be cancelled, and this probe must always answer within `timeout`.
public struct TunneldProbe: TunneldProbing {
    public var host: String
    public var port: Int
    public var timeout: Duration

    public init(host: String = "127.0.0.1", port: Int = 49151, timeout: Duration = .seconds(3)) {
        self.host = host
        self.port = port
        self.timeout = timeout
    }

    public var address: String { "\(host):\(port)" }

    public func state() async -> TunneldState {
        let (host, port, timeout) = (host, port, timeout)
        let result: Result<Data, ProbeFailure> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: Self.get(host: host, port: port, timeout: timeout))
            }
        }
        switch result {
        case .failure(let failure):
            return .notRunning(reason: failure.reason)
        case .success(let body):
            do {
                return .running(udids: try PyMobileDevice3Parser.tunneledUDIDs(body))
            } catch {
                return .notRunning(reason: "\(error)")
            }
        }
    }

    struct ProbeFailure: Error {
        var reason: String
    }

    /// `GET /` with `Connection: close`; the body of a 200 answer. Every wait is bounded by `timeout`.
    static func get(host: String, port: Int, timeout: Duration) -> Result<Data, ProbeFailure> {
        // Not the context's clock: a synchronous poll(2) loop on a background queue.
        let deadline = ContinuousClock.now + timeout
        func remaining() -> Int32 {
            let left = (deadline - ContinuousClock.now).components
            return Int32(clamping: max(0, left.seconds * 1000 + left.attoseconds / 1_000_000_000_000_000))
        }
        let fd = socket(AF_INET, SocketCalls.streamSocket, 0)
        guard fd >= 0 else { return .failure(ProbeFailure(reason: "socket() failed")) }
        defer { close(fd) }
        SocketCalls.ignoreBrokenPipe(fd)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr(host)
        let started = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if started != 0 && errno != EINPROGRESS {
            return .failure(ProbeFailure(reason: "nothing listens on \(host):\(port)"))
        }
        guard wait(fd, for: Int16(POLLOUT), milliseconds: remaining()) else {
            return .failure(ProbeFailure(reason: "no answer from \(host):\(port) in time"))
        }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
        guard error == 0 else { return .failure(ProbeFailure(reason: "nothing listens on \(host):\(port)")) }

        let request = Array("GET / HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n\r\n".utf8)
        guard
            request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, SocketCalls.noSignalSendFlags) })
                == request.count
        else {
            return .failure(ProbeFailure(reason: "could not send the request"))
        }
        var response = Data()
        var buffer = [UInt8](repeating: 0, count: 16_384)
        // tunneld's answer is a few hundred bytes; a megabyte means something else answers.
        while response.count < 1_000_000 {
            guard wait(fd, for: Int16(POLLIN), milliseconds: remaining()) else {
                return .failure(ProbeFailure(reason: "\(host):\(port) did not finish answering in time"))
            }
            let count = recv(fd, &buffer, buffer.count, 0)
            if count == 0 { break }
            if count < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                return .failure(ProbeFailure(reason: "reading from \(host):\(port) failed (errno \(errno))"))
            }
            response.append(contentsOf: buffer[0..<count])
        }
        guard let split = response.range(of: Data("\r\n\r\n".utf8)) else {
            return .failure(ProbeFailure(reason: "\(host):\(port) did not answer HTTP"))
        }
        let status = String(decoding: response[..<split.lowerBound], as: UTF8.self).split(separator: " ")
        guard status.count >= 2, status[1] == "200" else {
            return .failure(
                ProbeFailure(reason: "\(host):\(port) answered HTTP \(status.dropFirst().first ?? "?")"))
        }
        return .success(response[split.upperBound...])
    }

    static func wait(_ fd: Int32, for events: Int16, milliseconds: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: events, revents: 0)
        while true {
            let ready = poll(&entry, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            return ready > 0
        }
    }
}
