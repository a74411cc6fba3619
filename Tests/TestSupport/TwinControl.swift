import Foundation

/// The twins' control socket (`<state>/control.sock`, JSON lines), as a test drives it from outside
/// the process that runs them: faults, reboots, a battery change.
public enum TwinControl {
    /// Sends JSON lines to `<state>/control.sock` and returns the reply lines.
    public static func request(_ directory: URL, _ lines: [String]) throws -> [String] {
        let fd = socket(AF_UNIX, TestPlatform.streamSocket, 0)
        precondition(fd >= 0)
        defer { close(fd) }
        let path = directory.appendingPathComponent("control.sock").path
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard TestPlatform.connect(fd, toUnixSocket: path) == 0 else { throw POSIXError(.ECONNREFUSED) }
        var replies: [String] = []
        var pending = Data()
        for line in lines {
            let bytes = Array((line + "\n").utf8)
            _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            while !pending.contains(UInt8(ascii: "\n")) {
                var buffer = [UInt8](repeating: 0, count: 65_536)
                let count = recv(fd, &buffer, buffer.count, 0)
                guard count > 0 else { throw POSIXError(.ETIMEDOUT) }
                pending.append(contentsOf: buffer[0..<count])
            }
            let newline = pending.firstIndex(of: UInt8(ascii: "\n"))!
            replies.append(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
            pending = Data(pending[(newline + 1)...])
        }
        return replies
    }
}
