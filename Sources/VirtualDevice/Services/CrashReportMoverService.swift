/// com.apple.crashreportmover: the device moves pending reports into place and says "ping"
/// (4 raw bytes, no framing), which idevicecrashreport waits for (PROTOCOL.md §8).
struct CrashReportMoverService {
    let stream: ByteStream

    func run() async throws {
        try await stream.write(Array("ping".utf8))
        // The client closes after reading; do not hold the connection longer than it would wait.
        _ = try? await stream.read(upTo: 64, timeout: .seconds(30))
    }
}
