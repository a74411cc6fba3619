import Foundation
import HADeployCore
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A usbmuxd that is there but broken: it accepts connections on a UNIX socket and answers every
/// request the same wrong way. Not a stand-in for usbmuxd (the virtual one is): a fault injector.
final class BrokenUsbmuxd: @unchecked Sendable {
    enum Behaviour: String, CaseIterable, Sendable {
        case closes, garbage, truncated, notAPlist
    }

    let path: String
    private let listener: Int32
    private let behaviour: Behaviour

    init(_ behaviour: Behaviour) throws {
        self.behaviour = behaviour
        // In a folder of its own: a usbmuxd socket in the shared /tmp is refused (another user could
        // have bound it).
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "mux-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        path = folder.appendingPathComponent("mux.sock").path
        listener = socket(AF_UNIX, TestPlatform.streamSocket, 0)
        let bound = OwnerOnlySocket.bind(listener, at: path)
        guard bound == 0, listen(listener, 16) == 0 else { throw CocoaError(.fileWriteUnknown) }
        let thread = Thread { [listener, behaviour] in
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 { return }
                Self.serve(client, behaviour)
            }
        }
        thread.start()
    }

    static func serve(_ client: Int32, _ behaviour: Behaviour) {
        defer { close(client) }
        var request = [UInt8](repeating: 0, count: 4096)
        _ = recv(client, &request, request.count, 0)
        let reply: [UInt8]
        switch behaviour {
        case .closes: reply = []
        case .garbage: reply = Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".utf8)
        case .truncated: reply = [0x40, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00]
        case .notAPlist:
            let body = Array("this is not a property list at all".utf8)
            reply = [UInt8(16 + body.count), 0, 0, 0, 1, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0] + body
        }
        if !reply.isEmpty { _ = send(client, reply, reply.count, Int32(MSG_NOSIGNAL)) }
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        unlink(path)
        rmdir((path as NSString).deletingLastPathComponent)
    }
}

@Suite struct BrokenUsbmuxdTests {
    @Test(arguments: [
        (BrokenUsbmuxd.Behaviour.closes, "it closed the connection without answering"),
        (.garbage, "its reply is not usbmuxd's protocol (header: length 1347703880"),
        (.truncated, "it sent a truncated reply (7 of the 16 header bytes: 40 00 00 00 01 00 00)"),
        (.notAPlist, "its reply is not a property list (first bytes 74 68 69 73"),
    ])
    func devicesSaysWhatABrokenUsbmuxdSentAndFails(behaviour: BrokenUsbmuxd.Behaviour, says: String)
        async throws
    {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        let usbmuxd = try BrokenUsbmuxd(behaviour)
        defer { usbmuxd.stop() }
        let started = ContinuousClock.now
        let result = try await HADeployBinary.run(
            ["devices"], in: project.url, environment: ["USBMUXD_SOCKET_ADDRESS": "UNIX:\(usbmuxd.path)"],
            timeout: .seconds(60))
        #expect(result.status == 1, "\(behaviour): \(result.stdout) \(result.stderr)")
        #expect(result.stdout.contains(says), "\(behaviour): \(result.stdout)")
        #expect(result.stderr.contains("error: usbmuxd at UNIX:\(usbmuxd.path) answered ListDevices wrongly"))
        #expect(!result.stdout.contains("Operation not permitted"))
        #expect(ContinuousClock.now - started < .seconds(30))
    }

    /// `hadeploy muxer` in front of a broken usbmuxd passes its wrong answer on: a client sees the
    /// fault (as it would without hadeploy), never an empty device list made to look healthy.
    @Test(arguments: [BrokenUsbmuxd.Behaviour.garbage, .notAPlist, .closes])
    func theMuxerShowsABrokenUsbmuxdAsBroken(behaviour: BrokenUsbmuxd.Behaviour) async throws {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        let usbmuxd = try BrokenUsbmuxd(behaviour)
        defer { usbmuxd.stop() }
        let socket = project.url.appendingPathComponent("m.sock").path
        let muxer = try BackgroundCommand(
            try await HADeployBinary.path,
            ["muxer", "--socket", socket, "--usbmuxd", "UNIX:\(usbmuxd.path)", "--pair-records", "records"],
            in: project.url, environment: [:])
        defer { muxer.stop() }
        #expect(try await muxer.line(startingWith: "USBMUXD_SOCKET_ADDRESS=") != nil, "\(muxer.output)")
        let listed = try await ToolRun.run(
            "idevice_id", ["-l"], environment: ["USBMUXD_SOCKET_ADDRESS": "UNIX:" + socket])
        #expect(listed.status != 0, "\(behaviour): \(listed.stdout)")
        #expect(listed.stdout.isEmpty, "\(behaviour): \(listed.stdout)")
    }

    /// No usbmuxd at all (a Linux host without one, an ordinary user): the muxer lists what it finds
    /// over Wi-Fi — here nothing — and answers, as a usbmuxd with no device does.
    @Test func theMuxerWithoutAnyUsbmuxdListsNoDeviceAndAnswers() async throws {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        let socket = project.url.appendingPathComponent("m.sock").path
        let muxer = try BackgroundCommand(
            try await HADeployBinary.path,
            [
                "muxer", "--socket", socket, "--usbmuxd", "UNIX:/nonexistent/usbmuxd.sock", "--pair-records",
                "records",
            ],
            in: project.url, environment: [:])
        defer { muxer.stop() }
        #expect(try await muxer.line(startingWith: "USBMUXD_SOCKET_ADDRESS=") != nil, "\(muxer.output)")
        let listed = try await ToolRun.run(
            "idevice_id", ["-l"], environment: ["USBMUXD_SOCKET_ADDRESS": "UNIX:" + socket])
        #expect(listed.status == 0, "\(listed.stdout)\(listed.stderr)")
    }

    @Test func aUsbmuxdThatIsNotRunningIsNoError() async throws {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        let result = try await HADeployBinary.run(
            ["devices"], in: project.url,
            environment: ["USBMUXD_SOCKET_ADDRESS": "UNIX:/nonexistent/usbmuxd.sock"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.contains("usbmuxd could not be reached at UNIX:/nonexistent/usbmuxd.sock"),
            "\(result.stdout)")
    }
}

extension BrokenUsbmuxdTests {
    /// A minimal arm64 app bundle: Info.plist and a thin Mach-O header (enough to plan and connect).
    static func tinyApp(in directory: URL) throws -> URL {
        let app = directory.appendingPathComponent("Tiny.app")
        try FileManager.default.createDirectory(at: app, withIntermediateDirectories: true)
        let plist: [String: Any] = [
            "CFBundleIdentifier": "com.example.hadashboard", "CFBundleExecutable": "Tiny",
            "CFBundleVersion": "1", "CFBundleShortVersionString": "1.0",
        ]
        try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0).write(
            to: app.appendingPathComponent("Info.plist"))
        var header = Data()
        for word: UInt32 in [0xFEED_FACF, 0x0100_000C, 0, 2, 0, 0, 0, 0] {
            withUnsafeBytes(of: word.littleEndian) { header.append(contentsOf: $0) }
        }
        try header.write(to: app.appendingPathComponent("Tiny"))
        return app
    }

    @Test func aDeployEndsAtOnceWhenUsbmuxdIsBroken() async throws {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        let app = try Self.tinyApp(in: project.url)
        let usbmuxd = try BrokenUsbmuxd(.closes)
        defer { usbmuxd.stop() }
        let started = ContinuousClock.now
        let result = try await HADeployBinary.run(
            ["mini4", "--no-build", "--artifact", app.path, "--no-verify"], in: project.url,
            environment: [
                "USBMUXD_SOCKET_ADDRESS": "UNIX:\(usbmuxd.path)",
                "IPAD_MINI4_UDID": "00008030-000000000000001E",
                "HA_SERVER": "http://127.0.0.1:1", "HA_TOKEN": "unused-with-no-verify",
            ],
            timeout: .seconds(120))
        let elapsed = ContinuousClock.now - started
        #expect(result.status == 1, "\(result.stdout)\n\(result.stderr)")
        let output = result.stdout + result.stderr
        #expect(output.contains("connection to usbmuxd lost"), "\(output)")
        #expect(output.contains("it closed the connection without answering"), "\(output)")
        #expect(!output.contains("raise `timeouts."), "\(output)")
        // Not the connect step's 30 s deadline (nor a retry's): a few seconds.
        #expect(elapsed < .seconds(20), "\(elapsed)")
    }
}
