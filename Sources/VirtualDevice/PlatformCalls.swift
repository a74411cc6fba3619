import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The C calls and kernel files VirtualDevice uses that differ between Linux (Glibc) and macOS
/// (Darwin), in one place (scripts/platform-lint.sh fails on a platform spelling anywhere else in
/// the target).
enum PlatformCalls {
    /// A stream socket type closed on exec where the kernel takes that with the type (Linux);
    /// Darwin has no `SOCK_CLOEXEC`: there the plain type.
    #if canImport(Glibc)
        static let streamSocketCloseOnExec = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    #else
        static let streamSocketCloseOnExec = SOCK_STREAM
    #endif

    /// `close(2)`, for types whose own `close` methods hide it.
    static func closeDescriptor(_ descriptor: Int32) {
        #if canImport(Glibc)
            _ = Glibc.close(descriptor)
        #else
            _ = Darwin.close(descriptor)
        #endif
    }

    /// A path the kernel resolves to `name` in the directory held open as `directory` without
    /// following what the directory's own path has become: Linux through /proc/self/fd; elsewhere
    /// the directory's current path (`F_GETPATH`) and the name, which is path-based (a rename
    /// between the two calls is seen).
    static func pathThroughDescriptor(_ directory: Int32, _ name: String) -> String? {
        #if os(Linux)
            return "/proc/self/fd/\(directory)/\(name)"
        #else
            var buffer = [CChar](repeating: 0, count: Int(MAXPATHLEN) + 1)
            guard fcntl(directory, F_GETPATH, &buffer) == 0 else { return nil }
            return String(cString: buffer) + "/" + name
        #endif
    }

    /// The uid owning the loopback TCP socket bound to `clientPort` and connected to `serverPort`,
    /// from the kernel's TCP tables (Linux: /proc/net/tcp and tcp6, `local_address rem_address … uid`
    /// columns, ports in hex). Nil where it cannot be read, and always on systems without such a
    /// table (macOS).
    static func loopbackSocketOwner(clientPort: Int, serverPort: Int) -> uid_t? {
        #if os(Linux)
            let local = String(format: ":%04X", clientPort)
            let remote = String(format: ":%04X", serverPort)
            for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
                guard let text = readKernelFile(table) else { continue }
                for line in text.split(separator: "\n").dropFirst() {
                    let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                    guard fields.count > 7, fields[1].hasSuffix(local), fields[2].hasSuffix(remote),
                        let uid = uid_t(fields[7])
                    else { continue }
                    return uid
                }
            }
            return nil
        #else
            return nil
        #endif
    }

    /// Whether this system can name the owner of a loopback TCP connection (`loopbackSocketOwner`).
    static var knowsLoopbackSocketOwners: Bool {
        #if os(Linux)
            true
        #else
            false
        #endif
    }

    #if os(Linux)
        /// A /proc file whole (its size reads as 0, so it is read to the end, not by its size).
        private static func readKernelFile(_ path: String) -> String? {
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return nil }
            defer { close(descriptor) }
            var data = Data()
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                data.append(contentsOf: buffer[0..<count])
            }
            return String(decoding: data, as: UTF8.self)
        }
    #endif
}
