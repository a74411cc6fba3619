/// com.apple.crashreportmover: the device moves pending reports into place and says "ping\0"
/// (5 raw bytes, no framing). idevicecrashreport reads 4-byte chunks until it sees "ping"
/// (PROTOCOL.md §8); pymobiledevice3 reads exactly "ping\0" and fails on anything else.
struct CrashReportMoverService {
    let stream: ByteStream

    func run() async throws {
        try await stream.write(Array("ping".utf8) + [0])
        // The client closes after reading; do not hold the connection longer than it would wait.
        _ = try? await stream.read(upTo: 64, timeout: .seconds(30))
    }
}
