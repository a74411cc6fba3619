import Foundation
import SSHTransport

/// What a jailbroken device tells over SSH without anything being changed on it.
public struct JailbreakStatus: Sendable, Equatable {
    /// `sysctl -n kern.boottime`: `{ sec = 1700000000, usec = 0 } Tue Nov 14 …`.
    public var bootedAt: Date?
    /// `df -k` of the data partition: available and total bytes.
    public var availableBytes: Int64?
    public var capacityBytes: Int64?
    /// The installed app's Info.plist (nil: no app with that bundle id in the install directory).
    public var infoPlist: Data?
    /// Whether a process of the app's executable runs (nil: the app is not installed).
    public var running: Bool?
}

extension JailbreakDeployer {
    /// One connection, read-only: the boot time, free space, the app's Info.plist and its process.
    public func status(bundleID: String?) async throws -> JailbreakStatus {
        try await withConnection { connection in
            let facts = try await connection.execute(
                "sysctl -n kern.boottime 2>/dev/null; echo; df -k \(ShellQuote.quote(config.mobileDirectory)) "
                    + "2>/dev/null | tail -n 1",
                step: "reading the boot time and free space")
            let lines = facts.stdoutText.split(separator: "\n", omittingEmptySubsequences: false).map(
                String.init)
            var status = JailbreakStatus()
            status.bootedAt = lines.first.flatMap(Self.bootTime)
            if let df = lines.dropFirst().last(where: { !$0.isEmpty }) {
                // Filesystem 1K-blocks Used Available Capacity/Use% Mounted on
                let fields = df.split(separator: " ", omittingEmptySubsequences: true)
                if fields.count >= 4, let total = Int64(fields[1]), let available = Int64(fields[3]) {
                    status.capacityBytes = total * 1024
                    status.availableBytes = available * 1024
                }
            }
            guard let bundleID else { return status }
            // The bundle id is in the plist's bytes, binary or XML: grep finds the app, cat reads it.
            let directory = ShellQuote.quote(config.installDirectory)
            let found = try await connection.execute(
                "for f in \(directory)/*.app/Info.plist; do grep -q -F \(ShellQuote.quote(bundleID)) \"$f\" "
                    + "2>/dev/null && { echo \"$f\"; break; }; done",
                step: "finding \(bundleID)")
            guard let path = found.stdoutText.split(separator: "\n").first.map(String.init), !path.isEmpty
            else {
                return status
            }
            let plist = try await connection.run("cat \(ShellQuote.quote(path))", step: "reading \(path)")
                .stdout
            status.infoPlist = plist
            let executable =
                (try? PropertyListSerialization.propertyList(from: plist, format: nil) as? [String: Any])?[
                    "CFBundleExecutable"] as? String
            guard let executable, !executable.isEmpty else { return status }
            let processes = try await connection.execute("ps ax -o command=", step: "listing processes")
            status.running = processes.stdoutText.split(separator: "\n").contains { line in
                let command = line.trimmingCharacters(in: .whitespaces)
                return command == executable || command.hasPrefix(executable + " ")
                    || command.contains(".app/" + executable)
            }
            return status
        }
    }

    /// `{ sec = 1700000000, usec = 12345 } Tue Nov 14 22:13:20 2023` → the date.
    static func bootTime(_ text: String) -> Date? {
        guard let range = text.range(of: "sec = ") else { return nil }
        let digits = text[range.upperBound...].prefix { $0.isNumber }
        return Double(digits).map { Date(timeIntervalSince1970: $0) }
    }
}
