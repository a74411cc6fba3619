import Foundation
import HomeAssistant
import TestSupport
import Testing

/// Servers that authenticate like Home Assistant and then misbehave (scripts/ha/hostile_ha.py): the
/// client must stay bounded and say what happened, promptly.
@Suite("A hostile or stalled server")
struct HostileServerTests {
    func options(_ server: HostileHomeAssistant) throws -> ClientOptions {
        var options = ClientOptions(
            server: try ServerAddress(server.url), token: AccessToken("hostile-test"), clock: TestHost.clock)
        options.reconnect = .never
        return options
    }

    /// The process's peak resident memory, in bytes.
    static func peakResidentBytes() -> Int {
        TestPlatform.peakResidentBytes()
    }

    /// Before: the client assembled the message without a limit (3.7 GB in 10 s) until the system
    /// killed it. Now: the connection ends at the 64 MiB cap, and the error says why.
    @Test func aMessageThatNeverEndsIsCutOffAtTheCapWithItsReason() async throws {
        let server = try await HostileHomeAssistant.start(.endless)
        defer { server.stop() }
        let connection = HomeAssistantConnection(options: try options(server))
        try await connection.connect()
        let before = Self.peakResidentBytes()
        let clock = ContinuousClock()
        let started = clock.now
        await #expect {
            try await connection.config()
        } throws: { error in
            let text = "\(error)"
            return text.contains("larger than 64 MiB") && text.contains("stopped reading from Home Assistant")
        }
        // The cap, not the 30 s request deadline, ended it.
        #expect(clock.now - started < .seconds(25))
        let grown = Self.peakResidentBytes() - before
        #expect(grown < 512 << 20, "peak memory grew by \(grown >> 20) MiB")
        #expect(await connection.state == .closed)
        await connection.close()
    }

    /// Before: a server's 100,000-digit `ha_version` was printed whole. Now at most 32 characters of
    /// it are shown, and no control character.
    @Test func aServersHugeVersionIsShownCutAndClean() async throws {
        let server = try await HostileHomeAssistant.start(.version)
        defer { server.stop() }
        let connection = HomeAssistantConnection(options: try options(server))
        try await connection.connect()
        let version = try #require(await connection.haVersion)
        #expect(version.count <= 33, "\(version.count) characters")
        #expect(version.hasPrefix("9999") && version.hasSuffix("…"))
        #expect(!version.unicodeScalars.contains { $0.value < 0x20 })
        await connection.close()
    }

    /// Before: three requests waited their 30 s each and the preflight read as "dashboard not found";
    /// now a ping with the connect deadline says the server is stalled.
    @Test func aServerThatStopsAnsweringIsReportedAsStalled() async throws {
        let server = try await HostileHomeAssistant.start(.stall)
        defer { server.stop() }
        let clock = ContinuousClock()
        let started = clock.now
        let report = await Preflight(options: try options(server)).run(dashboard: .named("wall-kitchen"))
        #expect(!report.passed)
        #expect(report.errors.map(\.code) == ["stalled"], "\(report.issues)")
        #expect(report.errors.first?.message.contains("stopped answering") == true)
        #expect(report.errors.first?.message.contains("stalled") == true)
        #expect(report.dashboard == nil, "nothing was learnt about the dashboard")
        #expect(clock.now - started < .seconds(20))
    }

    /// HA pings every 55 s and drops a client that does not answer; this server pings before each
    /// answer, so the answer proves the pong came back, with the ping's payload, masked.
    @Test func theServersPingsAreAnsweredWithMaskedPongs() async throws {
        let server = try await HostileHomeAssistant.start(.ping)
        defer { server.stop() }
        let connection = HomeAssistantConnection(options: try options(server))
        try await connection.connect()
        for _ in 0..<3 {
            let reply = try await connection.send(RawRequest("hadeploy/ping_probe"), timeout: .seconds(5))
            #expect(reply["pong"] == reply["sent"], "\(reply)")
            #expect(reply["sent"]?.stringValue?.hasPrefix("hadeploy-ping-") == true)
            #expect(reply["masked"] == true, "the client's frames are masked")
        }
        await connection.close()
    }

    @Test func serverURLsWithLineBreaksOrImpossiblePortsAreRefused() throws {
        for (url, says) in [
            ("http://127.0.0.1:8123\r", "carriage return"),
            ("http://127.0.0.1:8123/\r\nX-Evil: 1", "carriage return"),
            ("http://ha.local\n:8123", "line feed"), ("http://127.0.0.1:0", "port 0"),
            ("http://127.0.0.1:99999", "port 99999"),
        ] {
            #expect(throws: HomeAssistantError.self, "\(url.debugDescription)") { try ServerAddress(url) }
            do {
                _ = try ServerAddress(url)
            } catch {
                #expect("\(error)".contains(says), "\(error)")
                #expect(!"\(error)".contains("\r"), "the message itself holds no raw CR")
            }
        }
        #expect(try ServerAddress(" http://127.0.0.1:65535 ").port == 65535)
        #expect(try ServerAddress("https://ha.example.com").port == 443)
    }
}
