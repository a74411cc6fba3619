import Foundation
import HADeployCore
import Logging
import NIOCore
import NIOPosix
import TestSupport
import Testing

@testable import VirtualDevice

#if canImport(Glibc)
    import Glibc
#endif

/// An app that prints one line and shows a fixed screen.
struct GreeterBehaviour: VirtualAppBehaviour {
    func run(_ launch: VirtualAppLaunch, context: VirtualAppContext) async {
        context.show(
            VirtualScreen(
                title: launch.displayName, lines: ["hello \(launch.arguments.joined(separator: " "))"]))
        context.print("hello from \(launch.bundleIdentifier)")
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(60)) }
    }
}

extension VirtualDeviceSuite {
    /// `D` (detach) and output relaying are not reachable through idevicedebug 1.3.0, so these talk
    /// GDB remote protocol to the debugserver service directly over a socket pair.
    @Suite("debugserver GDB details: O packets, detach")
    struct DebugserverProtocolTests {
        /// A raw GDB client on one end of a socket pair, the service on the other.
        final class Client {
            let fd: Int32
            init(fd: Int32) {
                self.fd = fd
                var timeout = timeval(tv_sec: 10, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            }
            deinit { close(fd) }

            func send(_ payload: String) {
                let checksum = payload.utf8.reduce(UInt8(0)) { $0 &+ $1 }
                let packet = Array(("$" + payload + "#" + String(format: "%02x", checksum)).utf8)
                _ = packet.withUnsafeBytes { TestPlatform.send(fd, $0.baseAddress, $0.count, 0) }
            }

            /// Reads "+$payload#xx" and acknowledges it; returns the payload.
            func receive() throws -> String {
                var text = ""
                var byte: UInt8 = 0
                while true {
                    guard recv(fd, &byte, 1, 0) == 1 else { throw POSIXError(.ETIMEDOUT) }
                    text.append(Character(UnicodeScalar(byte)))
                    if text.count >= 3, text.dropLast(2).hasSuffix("#") { break }
                }
                _ = [UInt8(ascii: "+")].withUnsafeBytes { TestPlatform.send(fd, $0.baseAddress, 1, 0) }
                let start = text.firstIndex(of: "$")!
                let end = text.lastIndex(of: "#")!
                return String(text[text.index(after: start)..<end])
            }
        }

        static func hex(_ text: String) -> String { text.utf8.map { String(format: "%02X", $0) }.joined() }

        @Test("launch, O packet with the app's output, detach keeps the app running, k kills it")
        func detachKeepsAppRunning() async throws {
            let directory = try EmulatorFixture.makeDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let runtime = try DeviceRuntime(
                profile: Profiles.ipadMini4, stateDirectory: directory,
                pairRecords: try PairRecordStore(
                    directory: directory.appendingPathComponent("usbmuxd"), fileSystem: TestHost.fileSystem),
                behaviour: GreeterBehaviour(), logger: EmulatorFixture.logger, fileSystem: TestHost.fileSystem
            )
            let app = VirtualInstalledApp(
                bundleIdentifier: "io.hadeploy.greeter", displayName: "Greeter", bundleVersion: "1",
                shortVersion: "1.0", executable: "Greeter", architectures: ["arm64"],
                path: "/private/var/containers/Bundle/Application/X/Greeter.app",
                container: "/private/var/mobile/Containers/Data/Application/Y", staticDiskUsage: 1,
                packageType: "ipa")
            await runtime.recordInstall(app)

            for detach in [true, false] {
                var fds: [Int32] = [0, 0]
                #expect(socketpair(AF_UNIX, TestPlatform.streamSocket, 0, &fds) == 0)
                let client = Client(fd: fds[0])
                let channel = try await NIOPipeBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            let stream = try ByteStream(channel: channel)
                            Task {
                                await ServiceHost.serve(
                                    .debugserver(secure: false), on: stream, runtime: runtime)
                            }
                        }
                    }
                    .takingOwnershipOfDescriptor(inputOutput: fds[1]).get()
                defer { channel.close(promise: nil) }

                let argv0 = app.path + "/Greeter"
                let arguments = [argv0, "-HADashboard", "lobby"].enumerated().map { index, value in
                    "\(value.utf8.count * 2),\(index),\(Self.hex(value))"
                }
                client.send("A" + arguments.joined(separator: ","))
                #expect(try client.receive() == "OK")
                client.send("qLaunchSuccess")
                #expect(try client.receive() == "OK")
                client.send("c")
                let output = try client.receive()
                #expect(output == "O" + Self.hex("hello from io.hadeploy.greeter\n").lowercased())
                #expect(await runtime.runningApp?.arguments == [argv0, "-HADashboard", "lobby"])
                #expect(await runtime.screen.lines == ["hello -HADashboard lobby"])
                client.send(detach ? "D" : "k")
                #expect(try client.receive() == "OK")
                try await Task.sleep(for: .milliseconds(300))
                let running = await runtime.runningApp
                #expect((running != nil) == detach, "detach keeps the app, k kills it")
            }
        }
    }
}
