/// com.apple.syslog_relay: streams the device log, one line + "\n\0" each, until the client
/// closes (`idevicesyslog`, `pymobiledevice3 syslog live-old`). The client never sends anything.
struct SyslogRelayService {
    let runtime: DeviceRuntime
    let stream: ByteStream

    func run() async throws {
        let (id, entries) = runtime.log.listen()
        defer { runtime.log.stopListening(id) }
        let stream = self.stream
        // An idle device writes nothing, so a write failure would never tell that the client left:
        // its close ends the line stream instead.
        let runtime = self.runtime
        let watcher = Task {
            await stream.waitUntilClosed()
            runtime.log.stopListening(id)
        }
        defer { watcher.cancel() }
        for await entry in entries {
            try await stream.write(Array(runtime.log.line(entry).utf8) + [0x0A, 0x00])
        }
    }
}
