import Foundation
import HADeployCore
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// hadeploy's sockets (the usbmuxd relay, `hadeploy muxer --socket`, the SSH usbmuxd forwarder) hand
/// out pair records: no other local user may connect to them, at any moment.
struct OwnerOnlySocketTests {
    static func mode(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
    }

    @Test func aSocketIsOwnerOnlyWhereItAppearsAndNothingIsLeftBeside() throws {
        let root = try shortTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        // A folder everyone may look into, as /tmp or a shared state folder.
        #expect(chmod(root.path, 0o755) == 0)
        let path = root.appendingPathComponent("usbmuxd").path
        let fd = socket(AF_UNIX, SocketCalls.streamSocket, 0)
        defer { close(fd) }
        #expect(OwnerOnlySocket.bind(fd, at: path) == 0)
        #expect(listen(fd, 4) == 0)
        #expect(Self.mode(path) == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path) == ["usbmuxd"])

        // It works under its name: a client connects there.
        let client = socket(AF_UNIX, SocketCalls.streamSocket, 0)
        defer { close(client) }
        let connected = OwnerOnlySocket.connect(client, to: path)
        #expect(connected == 0, "\(String(cString: strerror(errno)))")
        // A path too long for a socket address is said as such, not connected to something else.
        let other = socket(AF_UNIX, SocketCalls.streamSocket, 0)
        defer { close(other) }
        #expect(OwnerOnlySocket.connect(other, to: path + String(repeating: "x", count: 200)) == nil)
    }

    @Test func whatIsAlreadyThereIsLeftAloneAndATooLongPathIsSaid() throws {
        let root = try shortTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let path = root.appendingPathComponent("taken").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data("mine".utf8)))
        let fd = socket(AF_UNIX, SocketCalls.streamSocket, 0)
        defer { close(fd) }
        #expect(OwnerOnlySocket.bind(fd, at: path) == EEXIST)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "mine")
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path) == ["taken"])

        let long = root.appendingPathComponent(String(repeating: "x", count: 120)).path
        #expect(OwnerOnlySocket.bind(fd, at: long) == ENAMETOOLONG)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path) == ["taken"])
    }
}
