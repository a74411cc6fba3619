import Foundation
import HADeployCore

/// A long-running command a test starts and reads while it runs (`hadeploy virtual`, `hadeploy
/// muxer`): stdout and stderr gathered together, line by line, until `stop()` kills it.
public final class BackgroundCommand: @unchecked Sendable {
    private let process: ChildProcess
    private let lock = NSLock()
    private var text = ""

    /// `keepStandardInputOpen`: its stdin stays open until `stop()` (a script that waits for its end).
    public init(
        _ executable: String, _ arguments: [String], in directory: URL, environment: [String: String],
        keepStandardInputOpen: Bool = false
    ) throws {
        var variables = HADeployBinary.baseEnvironment(home: directory)
        variables.merge(environment) { _, new in new }
        // stdout and stderr in one pipe, in the order it wrote them.
        let pipe = Pipe()
        let writing = pipe.fileHandleForWriting.fileDescriptor
        process = try ChildProcess(
            executable: executable, arguments: arguments, environment: variables, directory: directory.path,
            standardInput: keepStandardInputOpen ? .pipe : .nullDevice, standardOutput: .descriptor(writing),
            standardError: .descriptor(writing))
        try? pipe.fileHandleForWriting.close()
        // read(2) on a thread of its own, retried on EINTR: FileHandle's availableData traps when a
        // signal interrupts it (the test runner's children see many).
        let fd = pipe.fileHandleForReading.fileDescriptor
        let reader = Thread { [weak self, pipe] in
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if got < 0 && errno == EINTR { continue }
                if got <= 0 { break }
                guard let self else { break }
                let text = String(decoding: buffer[0..<got], as: UTF8.self)
                self.lock.withLock { self.text += text }
            }
            withExtendedLifetime(pipe) {}
        }
        reader.start()
    }

    /// Everything it printed so far.
    public var output: String { lock.withLock { text } }

    /// The first line starting with `prefix`, waiting for it up to `seconds`; nil if none came.
    public func line(startingWith prefix: String, within seconds: Int = 60) async throws -> String? {
        try await line(within: seconds) { $0.hasPrefix(prefix) }
    }

    /// The first line holding `part`, waiting for it up to `seconds`; nil if none came.
    public func line(containing part: String, within seconds: Int = 60) async throws -> String? {
        try await line(within: seconds) { $0.contains(part) }
    }

    private func line(within seconds: Int, where matches: (String) -> Bool) async throws -> String? {
        for _ in 0..<(seconds * 10) {
            if let found = output.split(separator: "\n").map(String.init).first(where: matches) {
                return found
            }
            if !process.isRunning { break }
            try await TestHost.clock.sleep(for: .milliseconds(100))
        }
        return output.split(separator: "\n").map(String.init).first(where: matches)
    }

    /// SIGTERM (what systemd and launchd send to stop a service), waiting `seconds` for the exit:
    /// its exit status, or nil when it did not end in time (it is killed then) or a signal ended it.
    public func terminate(within seconds: Int) -> Int32? {
        guard process.isRunning else { return nil }
        process.signal(SIGTERM)
        for _ in 0..<(seconds * 10) where process.isRunning { usleep(100_000) }
        if process.isRunning {
            process.signal(SIGKILL)
            waitForExit()
            return nil
        }
        return process.exitCode
    }

    /// SIGTERM, then SIGKILL after 5 s.
    public func stop() {
        try? process.standardInput?.close()
        guard process.isRunning else { return }
        process.signal(SIGTERM)
        for _ in 0..<50 where process.isRunning { usleep(100_000) }
        process.signal(SIGKILL)
        waitForExit()
    }

    private func waitForExit() {
        while process.isRunning { usleep(10_000) }
    }
}

/// A peer tool run to its end (`idevice_id`, `pymobiledevice3`), found on PATH, with `environment`
/// added. `USBMUXD_SOCKET_ADDRESS` is the caller's alone: never the one a test in the same process set
/// for itself (hadeploy's relay writes its own there), which a tool would otherwise inherit.
public enum ToolRun {
    public static func run(
        _ tool: String, _ arguments: [String], environment: [String: String] = [:],
        timeout: Duration = .seconds(60)
    ) async throws -> ProcessOutput {
        let assignments = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return try await TestHost.runner.run(
            ProcessCommand(
                "/usr/bin/env", ["-u", "USBMUXD_SOCKET_ADDRESS"] + assignments + [tool] + arguments),
            timeout: timeout)
    }
}
