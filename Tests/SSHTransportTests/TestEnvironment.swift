import Foundation
import HADeployCore
import SSHTransport

#if canImport(Glibc)
    import Glibc
#endif

/// Fixed facts prepared by scripts/ssh-peers.sh, and small process helpers.
enum TestEnvironment {
    static let user = "hadeploy-ssh"
    static let stateDirectory = "/var/lib/hadeploy-ssh-test"
    static var ed25519Key: String { stateDirectory + "/id_ed25519" }
    static var rsaKey: String { stateDirectory + "/id_rsa" }
    static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static var scriptsDirectory: URL { repoRoot.appendingPathComponent("scripts/ssh") }

    struct SetupMissing: Error, CustomStringConvertible {
        let description: String
    }

    /// Fails (never skips) when the setup script has not been run.
    static func requireSetup() throws {
        for path in [ed25519Key, rsaKey, "/usr/sbin/sshd", "/usr/sbin/dropbear"] {
            guard FileManager.default.fileExists(atPath: path) else {
                throw SetupMissing(description: "\(path) is missing: run scripts/ssh-peers.sh (as root) first")
            }
        }
        guard (try? run("/usr/bin/id", ["-u", user]))?.status == 0 else {
            throw SetupMissing(description: "user \(user) is missing: run scripts/ssh-peers.sh (as root) first")
        }
        try? FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
    }

    struct RunResult {
        let status: Int32
        let output: String
    }

    /// Runs a short local command, bounded by `timeout`.
    @discardableResult
    static func run(
        _ executable: String, _ arguments: [String], stdin: String? = nil, environment: [String: String]? = nil,
        timeout: Double = 30
    ) throws -> RunResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        let input = Pipe()
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try? input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(timeout)
        var data = Data()
        let reader = output.fileHandleForReading
        while process.isRunning, Date() < deadline {
            usleep(10_000)
        }
        if process.isRunning {
            process.terminate()
            throw SetupMissing(description: "\(executable) \(arguments) did not finish within \(timeout) s")
        }
        data = reader.readDataToEndOfFile()
        return RunResult(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
    }

    /// A fresh directory under /tmp that the test user can use, removed by `remove`.
    static func makeDirectory(_ prefix: String, ownedByTestUser: Bool = false) throws -> URL {
        var template = Array("/tmp/\(prefix).XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SetupMissing(description: "mkdtemp failed") }
        let path = String(cString: made)
        chmod(path, 0o755)
        if ownedByTestUser { try run("/bin/chown", ["-R", "\(user):\(user)", path]) }
        return URL(fileURLWithPath: path)
    }

    static func remove(_ url: URL) {
        try? FileManager.default.removeItem(at: url)
    }

    /// A free TCP port on 127.0.0.1 (the kernel picks; closed again right away).
    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts TCP connections on 127.0.0.1:port.
    static func isListening(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return rc == 0
    }

    /// All descendants of `pid` (from /proc), deepest last.
    static func descendants(of pid: Int32) -> [Int32] {
        var parents: [Int32: [Int32]] = [:]
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let child = Int32(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, let parent = Int32(fields[1]) { parents[parent, default: []].append(child) }
        }
        var result: [Int32] = []
        var queue = [pid]
        while let next = queue.popLast() {
            for child in parents[next] ?? [] {
                result.append(child)
                queue.append(child)
            }
        }
        return result
    }

    static func credentialsKey(_ path: String) -> SSHAuthentication {
        .privateKey(path: path, passphrase: nil)
    }
}
