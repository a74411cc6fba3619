import Foundation
import Testing

@testable import MobileDevice

/// The usbmuxd relay's private folder (`hadeploy-usbmuxd.XXXXXX`) outlives a run killed with SIGKILL
/// (no exit handler runs); the next run removes it, and only it.
@Suite struct RelayFolderTests {
    @Test func aKilledRunsFolderIsRemovedAndNothingElse() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent(
            "relay-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: base) }
        func folder(_ name: String) throws -> String {
            let path = base.appendingPathComponent(name).path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            return path
        }
        // Killed: its socket file is there, nobody listens (the listener's process is gone).
        let killed = try folder("hadeploy-usbmuxd.AbC123")
        close(try UsbmuxRelay.listener(at: killed + "/usbmuxd", what: "a killed run's relay"))
        // Running: its socket still accepts.
        let running = try folder("hadeploy-usbmuxd.Live42")
        let live = try UsbmuxRelay.listener(at: running + "/usbmuxd", what: "a running relay")
        defer { close(live) }
        // Starting: the folder is made, the socket not bound yet.
        let starting = try folder("hadeploy-usbmuxd.New777")
        // Someone else's: a name that only looks alike, and a killed relay's folder holding a file.
        let other = try folder("hadeploy-usbmuxd.notours")
        close(try UsbmuxRelay.listener(at: other + "/usbmuxd", what: "another"))
        let kept = try folder("hadeploy-usbmuxd.Keep01")
        close(try UsbmuxRelay.listener(at: kept + "/usbmuxd", what: "another"))
        try Data("notes".utf8).write(to: URL(fileURLWithPath: kept + "/notes.txt"))

        RelayCleanup.removeStale(in: base.path)

        let left = Set(try FileManager.default.contentsOfDirectory(atPath: base.path))
        #expect(
            left == [
                "hadeploy-usbmuxd.Live42", "hadeploy-usbmuxd.New777", "hadeploy-usbmuxd.notours",
                "hadeploy-usbmuxd.Keep01",
            ], "\(left.sorted())")
        #expect(FileManager.default.fileExists(atPath: running + "/usbmuxd"))
        _ = starting
    }
}
