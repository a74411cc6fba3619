import Foundation
import HADeployCore
import SSHTestPeers
import TestSupport

@testable import SSHTransport

#if canImport(Glibc)
    import Glibc
#endif

/// A small usbmuxd on a UNIX socket, speaking the plist protocol of PROTOCOL.md §1 with two devices.
/// After a successful Connect it echoes bytes (the "device port"). Records every request type it saw.
final class FakeUsbmuxd: @unchecked Sendable {
    struct Device {
        let id: Int
        let udid: String
    }

    let path: String
    let devices: [Device]
    private let listenFD: Int32
    private let lock = NSLock()
    private var requests: [String] = []
    private var clients: [Int32] = []
    private var stopped = false

    init(directory: URL, devices: [Device]) throws {
        self.devices = devices
        path = directory.appendingPathComponent("usbmuxd").path
        listenFD = socket(AF_UNIX, TestPlatform.streamSocket, 0)
        let rc = OwnerOnlySocket.bind(listenFD, at: path)
        guard rc == 0, listen(listenFD, 16) == 0 else {
            throw TestEnvironment.SetupMissing(description: "fake usbmuxd cannot listen on \(path)")
        }
        // sshd connects as the login user (PLATFORM-NOTES §2).
        chmod(path, 0o666)
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    var seenRequests: [String] { lock.withLock { requests } }

    func stop() {
        lock.withLock {
            stopped = true
            for client in clients { shutdown(client, Int32(SHUT_RDWR)) }
        }
        // The accept loop closes the listening socket itself once accept fails.
        shutdown(listenFD, Int32(SHUT_RDWR))
        unlink(path)
    }

    private func acceptLoop() {
        while true {
            let client = accept(listenFD, nil, nil)
            if client < 0 {
                close(listenFD)
                return
            }
            let stop = lock.withLock { () -> Bool in
                if stopped {
                    close(client)
                } else {
                    clients.append(client)
                }
                return stopped
            }
            if stop {
                close(listenFD)
                return
            }
            Thread.detachNewThread { [self] in serve(client) }
        }
    }

    private func readExactly(_ fd: Int32, _ count: Int) -> Data? {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: count)
        while data.count < count {
            let n = read(fd, &buffer, count - data.count)
            if n <= 0 { return nil }
            data.append(contentsOf: buffer[0..<n])
        }
        return data
    }

    private func send(_ fd: Int32, _ plist: [String: Any], tag: UInt32) {
        let frame = UsbmuxFrame.plist(plist, tag: tag).encoded
        _ = frame.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    private func deviceEntry(_ device: Device) -> [String: Any] {
        [
            "DeviceID": device.id, "MessageType": "Attached",
            "Properties": [
                "ConnectionType": "USB", "DeviceID": device.id, "SerialNumber": device.udid,
                "ProductID": 4776, "LocationID": 336_592_896,
            ] as [String: Any],
        ]
    }

    private func serve(_ fd: Int32) {
        // Forget the descriptor before closing it: `stop` must never shut down a reused number
        // (it once cut the SSH connections of tests running in parallel).
        defer {
            lock.withLock {
                clients.removeAll { $0 == fd }
                close(fd)
            }
        }
        while let header = readExactly(fd, 16) {
            var buffer = header
            let length = Int(
                header.prefix(4).enumerated().reduce(UInt32(0)) {
                    $0 | UInt32($1.element) << (8 * UInt32($1.offset))
                })
            guard let body = readExactly(fd, length - 16) else { return }
            buffer.append(body)
            guard let frame = try? UsbmuxFrame.take(from: &buffer), let plist = frame.plist else { return }
            let type = plist["MessageType"] as? String ?? "?"
            let id = UsbmuxFilter.integer(plist["DeviceID"])
            lock.withLock { requests.append(id.map { "\(type) \($0)" } ?? type) }
            switch type {
            case "ListDevices":
                send(fd, ["DeviceList": devices.map(deviceEntry)], tag: frame.tag)
            case "Listen":
                send(fd, ["MessageType": "Result", "Number": 0], tag: frame.tag)
                for device in devices { send(fd, deviceEntry(device), tag: 0) }
                for device in devices.reversed() {
                    send(fd, ["MessageType": "Detached", "DeviceID": device.id], tag: 0)
                }
            case "ReadBUID":
                send(fd, ["BUID": "E1A2B3C4-0000-1111-2222-333344445555"], tag: frame.tag)
            case "ReadPairRecord":
                send(fd, ["MessageType": "Result", "Number": 2], tag: frame.tag)
            case "Connect":
                guard devices.contains(where: { $0.id == id }) else {
                    send(fd, ["MessageType": "Result", "Number": 2], tag: frame.tag)
                    continue
                }
                send(fd, ["MessageType": "Result", "Number": 0], tag: frame.tag)
                // Raw device stream from here on: echo.
                var chunk = [UInt8](repeating: 0, count: 4096)
                while true {
                    let n = read(fd, &chunk, chunk.count)
                    if n <= 0 { return }
                    _ = write(fd, chunk, n)
                }
            default:
                send(fd, ["MessageType": "Result", "Number": 1], tag: frame.tag)
            }
        }
    }
}

/// A minimal usbmuxd client for the tests (blocking, with a receive timeout).
struct UsbmuxTestClient {
    let fd: Int32

    init(path: String) throws {
        fd = socket(AF_UNIX, TestPlatform.streamSocket, 0)
        let rc = TestPlatform.connect(fd, toUnixSocket: path)
        guard rc == 0 else { throw TestEnvironment.SetupMissing(description: "cannot connect to \(path)") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func close() { TestPlatform.close(fd) }

    func send(_ plist: [String: Any], tag: UInt32) {
        var full = plist
        full["ClientVersionString"] = "test"
        full["ProgName"] = "SSHTransportTests"
        let frame = UsbmuxFrame.plist(full, tag: tag).encoded
        _ = frame.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    func sendRaw(_ data: Data) { _ = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }

    /// Reads exactly `count` bytes or returns what came before the timeout/EOF.
    func receiveRaw(_ count: Int) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: count)
        while data.count < count {
            let n = read(fd, &buffer, count - data.count)
            if n <= 0 { break }
            data.append(contentsOf: buffer[0..<n])
        }
        return data
    }

    func receive() -> [String: Any]? {
        var header = receiveRaw(16)
        guard header.count == 16 else { return nil }
        let length = Int(
            header.prefix(4).enumerated().reduce(UInt32(0)) {
                $0 | UInt32($1.element) << (8 * UInt32($1.offset))
            })
        header.append(receiveRaw(length - 16))
        return (try? UsbmuxFrame.take(from: &header))?.plist
    }
}
