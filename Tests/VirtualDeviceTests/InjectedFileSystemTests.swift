import Foundation
import HADeployCore
import TestSupport
import Testing
import VirtualDevice

extension VirtualDeviceSuite {
    /// The emulator reads and writes its state through the file system it is given (issue 24): a
    /// fake rooted in a temporary folder sees every file, and a state folder outside its root is
    /// refused before anything is written there.
    @Suite("the emulator's injected file system")
    struct InjectedFileSystemTests {
        @Test("device state, its key and the pair-record store are made through the given file system")
        func stateGoesThroughTheGivenFileSystem() async throws {
            let files = FakeFileSystem()
            let state = files.root.appendingPathComponent("state")
            let usbmuxd = try VirtualUsbmuxd(
                profiles: [Profiles.ipadMini4], stateDirectory: state, address: .tcp(port: 0),
                logger: EmulatorFixture.logger, fileSystem: files)
            _ = try await usbmuxd.start()
            await usbmuxd.stop()
            let device = state.appendingPathComponent("devices/mini4")
            for file in ["state.json", "device-key.pem", "Media/Downloads"] {
                #expect(files.fileExists(atPath: device.appendingPathComponent(file).path), "\(file)")
            }
            #expect(
                files.fileExists(
                    atPath: state.appendingPathComponent("usbmuxd/SystemConfiguration.plist").path))
        }

        @Test("a state folder outside the given file system's root is refused and left unwritten")
        func stateOutsideTheRootIsRefused() throws {
            let files = FakeFileSystem()
            let outside = try EmulatorFixture.makeDirectory()
            defer { try? FileManager.default.removeItem(at: outside) }
            let state = outside.appendingPathComponent("state")
            withKnownIssue("the fake records the call outside its root") {
                #expect(throws: FakeFileSystem.OutsideRoot.self) {
                    _ = try VirtualUsbmuxd(
                        profiles: [Profiles.ipadMini4], stateDirectory: state, address: .tcp(port: 0),
                        logger: EmulatorFixture.logger, fileSystem: files)
                }
            } matching: { issue in
                "\(issue)".contains(
                    "createPrivateDirectory(at: \(state.appendingPathComponent("usbmuxd").path))")
            }
            #expect(!FileManager.default.fileExists(atPath: state.path))
        }
    }
}
