import Foundation

/// Runs the device side of a tunnelled connection: lockdownd or one started service.
enum ServiceHost {
    /// One connection's life on the device: tied to the device's link and known to the runtime while
    /// `body` serves it, then closed. The peer hanging up ends it quietly; any other error is logged
    /// as how `name` ended.
    static func host(
        _ name: @autoclosure () -> String, on stream: ByteStream, runtime: DeviceRuntime,
        _ body: () async throws -> Void
    ) async {
        stream.attachLink(runtime.link)
        await runtime.register(stream)
        defer {
            stream.close()
            Task { await runtime.unregister(stream) }
        }
        do {
            try await body()
        } catch TransportError.closed {
            return
        } catch {
            runtime.logger.debug("\(name()) ended: \(error)")
        }
    }

    static func serve(_ kind: ServiceKind?, on stream: ByteStream, runtime: DeviceRuntime) async {
        await host("service \(String(describing: kind))", on: stream, runtime: runtime) {
            guard let kind else {
                try await LockdownService(runtime: runtime, stream: stream).run()
                return
            }
            if kind.usesTLS {
                try await stream.startServerTLS(runtime.tlsContext())
            }
            switch kind {
            case .afc:
                try await AFCService(root: runtime.paths.media, runtime: runtime, stream: stream).run()
            case .crashReportCopy:
                try await AFCService(root: runtime.paths.crashReports, runtime: runtime, stream: stream).run()
            case .crashReportMover:
                try await CrashReportMoverService(stream: stream).run()
            case .installationProxy:
                try await InstallationProxyService(runtime: runtime, stream: stream).run()
            case .notificationProxy(let insecure):
                try await NotificationProxyService(runtime: runtime, stream: stream, insecure: insecure).run()
            case .imageMounter:
                try await ImageMounterService(runtime: runtime, stream: stream).run()
            case .houseArrest:
                try await HouseArrestService(runtime: runtime, stream: stream).run()
            case .screenshotr:
                try await ScreenshotrService(runtime: runtime, stream: stream).run()
            case .debugserver:
                try await DebugserverService(runtime: runtime, stream: stream).run()
            case .syslogRelay:
                try await SyslogRelayService(runtime: runtime, stream: stream).run()
            case .osTraceRelay:
                try await OsTraceRelayService(runtime: runtime, stream: stream).run()
            case .diagnosticsRelay:
                try await DiagnosticsRelayService(runtime: runtime, stream: stream).run()
            case .springBoardServices:
                try await SpringBoardService(runtime: runtime, stream: stream).run()
            case .heartbeat:
                try await HeartbeatService(stream: stream).run()
            case .misagent:
                try await MisagentService(runtime: runtime, stream: stream).run()
            case .coreDeviceProxy:
                try await CoreDeviceProxyService(runtime: runtime, stream: stream).run()
            }
        }
    }
}
