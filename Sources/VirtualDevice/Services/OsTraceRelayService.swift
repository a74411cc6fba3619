import Foundation
import NIOCore

/// com.apple.os_trace_relay (iOS 10+, `pymobiledevice3 syslog live`): the unified log as binary
/// records. `StartActivity` is answered by a plist behind a two-step length prefix (4-byte
/// little-endian size of the size, then the size, little-endian), then every entry follows as
/// 0x02, a 4-byte little-endian length and one record (see `record`). `PidList` names the processes.
struct OsTraceRelayService {
    let runtime: DeviceRuntime
    let stream: ByteStream

    func run() async throws {
        let request = try await stream.readDictionary(timeout: .seconds(120))
        switch request["Request"] as? String ?? "" {
        case "StartActivity":
            try await reply(["Status": "RequestSuccessful"])
            try await relay(pid: request["Pid"] as? Int ?? -1)
        case "PidList":
            var payload: [String: Any] = [
                "\(DeviceRuntime.springBoardPID)": ["ProcessName": "SpringBoard"],
                "\(DeviceRuntime.installdPID)": ["ProcessName": "installd"],
                "\(DeviceRuntime.reportCrashPID)": ["ProcessName": "ReportCrash"],
            ]
            if let running = await runtime.runningProcess {
                payload["\(running.pid)"] = ["ProcessName": running.executable]
            }
            // This answer is one marker byte, then the plist with the usual big-endian length.
            try await stream.write([0x01])
            try await stream.writeLengthPrefixed(
                try PropertyList.xml(["Status": "RequestSuccessful", "Payload": payload]))
        default:
            try await reply(["Status": "RequestFailed"])
        }
    }

    private func reply(_ plist: [String: Any]) async throws {
        let data = try PropertyList.xml(plist)
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(4), endianness: .little)
        buffer.writeInteger(UInt32(data.count), endianness: .little)
        buffer.writeBytes(data)
        try await stream.write(buffer)
    }

    private func relay(pid: Int) async throws {
        let (id, entries) = runtime.log.listen()
        defer { runtime.log.stopListening(id) }
        let (stream, runtime) = (self.stream, self.runtime)
        // Nothing else arrives from the client: its close ends the relay.
        let watcher = Task {
            await stream.waitUntilClosed()
            runtime.log.stopListening(id)
        }
        defer { watcher.cancel() }
        for await entry in entries where pid == -1 || pid == entry.pid {
            let record = Self.record(entry)
            var buffer = ByteBuffer()
            buffer.writeInteger(UInt8(2))
            buffer.writeInteger(UInt32(record.readableBytes), endianness: .little)
            buffer.writeImmutableBuffer(record)
            try await stream.write(buffer)
        }
    }

    /// One record: a 129-byte little-endian header (pid, times, level, the sizes of the strings),
    /// then the executable path (NUL-terminated), the sender image name, the message, and the
    /// subsystem and category (each NUL-terminated, their sizes in the header).
    static func record(_ entry: DeviceLog.Entry) -> ByteBuffer {
        let executable = "/usr/libexec/\(entry.process)"
        let image = Array(entry.process.utf8) + [0]
        let message = Array(entry.message.utf8) + [0]
        let seconds = entry.date.timeIntervalSince1970
        var buffer = ByteBuffer()
        buffer.writeRepeatingByte(0, count: 9)
        buffer.writeInteger(UInt32(entry.pid), endianness: .little)
        buffer.writeInteger(UInt64(entry.pid), endianness: .little)  // procid
        buffer.writeRepeatingByte(0, count: 16)  // process image UUID
        buffer.writeRepeatingByte(0, count: 18)
        buffer.writeInteger(UInt32(seconds), endianness: .little)
        buffer.writeInteger(UInt32(0), endianness: .little)
        buffer.writeInteger(UInt32((seconds - seconds.rounded(.down)) * 1_000_000), endianness: .little)
        buffer.writeInteger(UInt8(0))
        buffer.writeInteger(level(entry.level))
        buffer.writeRepeatingByte(0, count: 6)
        buffer.writeInteger(UInt64(seconds * 24_000_000), endianness: .little)  // mach ticks, 24 MHz
        buffer.writeInteger(UInt64(entry.pid * 1000 + 1), endianness: .little)  // thread id
        buffer.writeRepeatingByte(0, count: 16)  // sender image UUID
        buffer.writeInteger(UInt16(image.count), endianness: .little)
        buffer.writeInteger(UInt16(message.count), endianness: .little)
        buffer.writeInteger(UInt16(0), endianness: .little)
        buffer.writeInteger(UInt32(0), endianness: .little)  // sender image offset
        buffer.writeInteger(UInt32(0), endianness: .little)  // subsystem size
        buffer.writeInteger(UInt32(0), endianness: .little)  // category size
        buffer.writeInteger(UInt32(0), endianness: .little)
        buffer.writeBytes(Array(executable.utf8) + [0])
        buffer.writeBytes(image)
        buffer.writeBytes(message)
        return buffer
    }

    private static func level(_ name: String) -> UInt8 {
        switch name {
        case "Info": return 0x01
        case "Debug": return 0x02
        case "Error": return 0x10
        case "Fault": return 0x11
        default: return 0x00
        }
    }
}
