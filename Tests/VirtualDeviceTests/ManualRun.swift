import Foundation
import Testing
import VirtualDevice

/// Keeps an emulator running for manual poking (VDEV_MANUAL=seconds); skipped otherwise.
@Test(.enabled(if: ProcessInfo.processInfo.environment["VDEV_MANUAL"] != nil))
func manualEmulator() async throws {
    let seconds = Double(ProcessInfo.processInfo.environment["VDEV_MANUAL"] ?? "60") ?? 60
    let directory = URL(fileURLWithPath: "/tmp/vdev-manual")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let emulator = try await EmulatorFixture.start(
        [Profiles.ipad2, Profiles.ipadMini4, Profiles.ipadMini5, Profiles.iphone16], directory: directory)
    print("MANUAL SOCKET \(emulator.socket)")
    try await Task.sleep(for: .seconds(seconds))
    await emulator.stop(removeState: false)
}
