import Foundation
import HADeployCore
import Logging
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The small guards every layer relies on against hostile input: URL credential redaction, owner-only
/// files, bounded configuration reads, checked seconds.
@Suite struct HostileInputGuardTests {
    @Test(arguments: [
        ("HA at http://admin:s3cret@ha.local:8123/api", "HA at http://admin:***@ha.local:8123/api"),
        ("\"url\":\"https:\\/\\/u:p%40ss@h\\/x\"", "\"url\":\"https:\\/\\/u:***@h\\/x\""),
        ("ssh://builder@mac-mini/work", "ssh://builder@mac-mini/work"),
        ("a http://u:pa@ss@h:1 b", "a http://u:***@h:1 b"),
        ("no credentials: http://ha.local:8123/?q=a@b", "no credentials: http://ha.local:8123/?q=a@b"),
        ("mail me@example.com", "mail me@example.com"),
        ("'-HAServerURL' 'http://x:y@z'", "'-HAServerURL' 'http://x:***@z'"),
    ])
    func urlCredentialsAreRedacted(input: String, expected: String) {
        #expect(URLCredentials.redact(input) == expected)
    }

    @Test func theOutputSinksRedact() {
        let sink = RecordingOutputSink()
        sink.write("server http://me:hunter2@ha:8123\n", to: .standardError)
        #expect(sink.standardError == "server http://me:***@ha:8123\n")
    }

    final class Captured: @unchecked Sendable {
        let lock = NSLock()
        var lines: [String] = []
    }

    struct CapturingHandler: LogHandler {
        let captured: Captured
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            captured.lock.withLock { captured.lines.append("\(event.message) \(event.metadata ?? [:])") }
        }
    }

    @Test func libraryLogsAreRedactedToo() {
        let captured = Captured()
        let logger = Logger(label: "t") { _ in RedactingLogHandler(CapturingHandler(captured: captured)) }
        logger.warning(
            "connect to http://u:topsecret@h:1 failed", metadata: ["url": "ws://u:alsosecret@h/api"])
        let line = captured.lock.withLock { captured.lines.joined() }
        #expect(line.contains("http://u:***@h:1"))
        #expect(!line.contains("topsecret") && !line.contains("alsosecret"), "\(line)")
    }

    /// With the usual umask (022) a default mode shows as 0644 and 0755. The umask is not set to 0
    /// here: it belongs to the whole process, and every test running beside this one would create
    /// its files and folders open to everyone meanwhile (one found a folder of mode 777 so).
    @Test func privateFilesAreOwnerOnly() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "private-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let file = root.appendingPathComponent("nested/secret.pem")
        try PrivateFiles.write(Data("key".utf8), to: file)
        try PrivateFiles.write(Data("key2".utf8), to: file)
        #expect(try String(contentsOf: file, encoding: .utf8) == "key2")
        let mode = { (path: String) in
            (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
        }
        #expect(try mode(file.path) == 0o600)
        #expect(try mode(file.deletingLastPathComponent().path) == 0o700)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: file.deletingLastPathComponent().path) == [
                "secret.pem"
            ])
    }

    @Test func aFIFOIsRefusedAtOnceInsteadOfBlocking() throws {
        let root = try temporaryDirectory("fifo")
        defer { try? FileManager.default.removeItem(at: root) }
        let fifo = root.appendingPathComponent("pipe").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let started = ContinuousClock.now
        let error = #expect(throws: TextFileError.self) { try TextFileReader().read(fifo) }
        #expect(error?.description == "\(fifo): is a FIFO (named pipe), not a regular file")
        #expect(error?.exitStatus == .config)
        #expect(ContinuousClock.now - started < .seconds(2))
        #expect(throws: TextFileError.self) { try TextFileReader().read("/dev/zero") }
        #expect(throws: TextFileError.self) { try TextFileReader().read(root.path) }
    }

    @Test func aFileOverTheCapIsRefused() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("big-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(count: 2048).write(to: file)
        let error = #expect(throws: TextFileError.self) { try TextFileReader(limit: 1024).read(file.path) }
        #expect(error?.reason.contains("at most 1024 bytes") == true)
    }

    @Test func invalidUTF8IsLocatedByLineAndColumn() {
        let error = #expect(throws: TextFileError.self) {
            try TextFileReader.decode(Data("ok\nstill ok\nab\u{e9}".utf8.dropLast()), name: "x.env")
        }
        #expect(error?.location?.description == "x.env:3:3")
    }

    @Test(arguments: [
        (1e300, Duration.longestDeadline), (Double.infinity, .longestDeadline), (Double.nan, .zero),
        (-5, .zero), (1.5, .milliseconds(1500)),
    ])
    func secondsAreConvertedWithoutATrap(seconds: Double, expected: Duration) {
        #expect(Duration.checkedSeconds(seconds) == expected)
    }

    @Test func clampingConversions() {
        #expect(Int(clampingDouble: 1e300) == .max)
        #expect(Int64(clampingDouble: -1e300) == .min)
        #expect(Int(clampingDouble: .nan) == 0)
        #expect(Int(clampingDouble: 41.9) == 41)
    }
}
