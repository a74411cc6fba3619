import Foundation
import HADeployCore
import TestSupport
import Testing
import VirtualDevice

#if canImport(Glibc)
    import Glibc
#endif

extension VirtualDeviceSuite {
    /// Two virtual usbmuxds and one socket path: the second must not steal the first one's clients,
    /// and stopping must never delete a socket file that is not its own. Judged by `idevice_id -l`.
    @Suite("virtual usbmuxd socket ownership")
    struct SocketOwnershipTests {
        @Test("a second daemon refuses a live socket; the first keeps serving and removes it on stop")
        func liveSocketIsNotStolen() async throws {
            let first = try await EmulatorFixture.start([Profiles.ipadMini4])
            let path = first.directory.appendingPathComponent("usbmuxd.sock").path
            let other = try EmulatorFixture.makeDirectory()
            defer { try? FileManager.default.removeItem(at: other) }
            let second = try VirtualUsbmuxd(
                profiles: [Profiles.ipad2], stateDirectory: other, address: .unixSocket(path),
                logger: EmulatorFixture.logger, fileSystem: TestHost.fileSystem)
            let error = await #expect(throws: VirtualDeviceError.self) { try await second.start() }
            #expect("\(error.map { "\($0)" } ?? "")".contains("another daemon is listening there"))

            let listed = try await first.run("idevice_id", ["-l"])
            #expect(listed.stdout.contains(await first.udid("mini4")), "\(listed)")
            await second.stop()
            #expect(
                FileManager.default.fileExists(atPath: path), "the refused daemon removed the live socket")
            await first.stop(removeState: false)
            #expect(!FileManager.default.fileExists(atPath: path))
            try? FileManager.default.removeItem(at: first.directory)
        }

        @Test("a stale socket file left by a killed daemon is replaced")
        func staleSocketIsReplaced() async throws {
            let directory = try EmulatorFixture.makeDirectory()
            let path = directory.appendingPathComponent("usbmuxd.sock").path
            // A socket file nobody listens on, as a SIGKILLed daemon leaves it.
            let fd = socket(AF_UNIX, TestPlatform.streamSocket, 0)
            let bound = OwnerOnlySocket.bind(fd, at: path)
            close(fd)
            #expect(bound == 0)
            let fixture = try await EmulatorFixture.start([Profiles.ipadMini4], directory: directory)
            let listed = try await fixture.run("idevice_id", ["-l"])
            #expect(listed.stdout.contains(await fixture.udid("mini4")), "\(listed)")
            await fixture.stop()
        }

        @Test("a regular file at the socket path is left alone and named in the error")
        func regularFileIsKept() async throws {
            let directory = try EmulatorFixture.makeDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let path = directory.appendingPathComponent("usbmuxd.sock").path
            try Data("notes".utf8).write(to: URL(fileURLWithPath: path))
            let daemon = try VirtualUsbmuxd(
                profiles: [Profiles.ipadMini4], stateDirectory: directory, address: .unixSocket(path),
                logger: EmulatorFixture.logger, fileSystem: TestHost.fileSystem)
            let error = await #expect(throws: VirtualDeviceError.self) { try await daemon.start() }
            #expect("\(error.map { "\($0)" } ?? "")".contains("not a socket"))
            #expect(FileManager.default.contents(atPath: path) == Data("notes".utf8))
            await daemon.stop()
        }
    }
}
