import Foundation
import NIOCore

/// What RemoteServiceDiscovery lists on one tunnel: the services of an iOS 17.4+ device and the
/// ports they listen on (fresh for each tunnel, as on a device), and who serves each port.
struct RSDServiceTable: Sendable {
    enum Handler: Sendable {
        /// lockdownd behind RSD (`com.apple.mobile.lockdown.remote.trusted`/`untrusted`).
        case lockdown
        /// A lockdown service behind RSD (`*.shim.remote`): RSDCheckin, then its usual protocol.
        case shim(ServiceKind)
        /// `com.apple.instruments.dtservicehub`: DTX.
        case instruments
        /// Listed as a device lists it; nothing here serves it (the host's connection is refused).
        case listedOnly
    }

    struct Entry: Sendable {
        let name: String
        let entitlement: String
        let port: UInt16
        let usesRemoteXPC: Bool
        let handler: Handler
    }

    let rsdPort: UInt16
    let entries: [Entry]

    /// The services an iOS 18/26 device lists (a subset of the ~100 names, including every one
    /// pymobiledevice3 and hadeploy use), with ports from a random base. The developer services
    /// (instruments, testmanagerd, debugproxy…) are listed only with the Developer disk image mounted.
    static func make(developerServices: Bool) -> RSDServiceTable {
        var port = UInt16.random(in: 49_152...56_000)
        func nextPort() -> UInt16 {
            port &+= UInt16.random(in: 1...40)
            return port
        }
        let rsdPort = nextPort()
        let served: [(String, String, Bool, Handler)] = [
            (
                "com.apple.mobile.lockdown.remote.trusted", "com.apple.mobile.lockdown.remote.trusted", false,
                .lockdown
            ),
            (
                "com.apple.mobile.lockdown.remote.untrusted", "com.apple.mobile.lockdown.remote.untrusted",
                false, .lockdown
            ),
            (
                "com.apple.instruments.dtservicehub", "com.apple.private.dt.instruments.dtservicehub", false,
                .instruments
            ),
            ("com.apple.afc.shim.remote", "com.apple.afc", false, .shim(.afc)),
            (
                "com.apple.crashreportcopymobile.shim.remote", "com.apple.crashreportcopymobile", false,
                .shim(.crashReportCopy)
            ),
            (
                "com.apple.crashreportmover.shim.remote", "com.apple.crashreportmover", false,
                .shim(.crashReportMover)
            ),
            (
                "com.apple.mobile.house_arrest.shim.remote", "com.apple.mobile.house_arrest", false,
                .shim(.houseArrest)
            ),
            (
                "com.apple.mobile.installation_proxy.shim.remote", "com.apple.mobile.installation_proxy",
                false,
                .shim(.installationProxy)
            ),
            (
                "com.apple.mobile.notification_proxy.shim.remote", "com.apple.mobile.notification_proxy",
                false,
                .shim(.notificationProxy(insecure: false))
            ),
            (
                "com.apple.mobile.insecure_notification_proxy.shim.remote",
                "com.apple.mobile.insecure_notification_proxy", false,
                .shim(.notificationProxy(insecure: true))
            ),
            (
                "com.apple.mobile.mobile_image_mounter.shim.remote", "com.apple.mobile.mobile_image_mounter",
                false,
                .shim(.imageMounter)
            ),
            ("com.apple.syslog_relay.shim.remote", "com.apple.syslog_relay", false, .shim(.syslogRelay)),
            ("com.apple.os_trace_relay.shim.remote", "com.apple.os_trace_relay", false, .shim(.osTraceRelay)),
            (
                "com.apple.mobile.diagnostics_relay.shim.remote", "com.apple.mobile.diagnostics_relay", false,
                .shim(.diagnosticsRelay)
            ),
            (
                "com.apple.springboardservices.shim.remote", "com.apple.springboardservices", false,
                .shim(.springBoardServices)
            ),
            (
                "com.apple.mobile.heartbeat.shim.remote", "com.apple.mobile.heartbeat", false,
                .shim(.heartbeat)
            ),
        ]
        let listed: [(String, String, Bool)] = [
            (
                "com.apple.coredevice.appservice", "com.apple.private.CoreDevice.canInstallCustomerContent",
                true
            ),
            ("com.apple.coredevice.deviceinfo", "com.apple.private.CoreDevice.canRetrieveDeviceInfo", true),
            (
                "com.apple.coredevice.diagnosticsservice",
                "com.apple.private.CoreDevice.canObtainDiagnostics", true
            ),
            (
                "com.apple.coredevice.fileservice.control",
                "com.apple.private.CoreDevice.canTransferFilesToDevice", true
            ),
            (
                "com.apple.coredevice.fileservice.data",
                "com.apple.private.CoreDevice.canTransferFilesToDevice", true
            ),
            (
                "com.apple.coredevice.openstdiosocket",
                "com.apple.private.CoreDevice.canInstallCustomerContent", false
            ),
            ("com.apple.dt.remoteFetchSymbols", "com.apple.private.dt.remoteFetchSymbols.client", false),
            ("com.apple.dt.testmanagerd.remote", "com.apple.private.dt.testmanagerd.client", false),
            (
                "com.apple.dt.testmanagerd.remote.automation", "com.apple.private.dt.testmanagerd.client",
                false
            ),
            ("com.apple.internal.dt.remote.debugproxy", "com.apple.private.dt.remote.debugproxy", false),
            ("com.apple.mobile.assertion_agent.shim.remote", "com.apple.mobile.assertion_agent", false),
            ("com.apple.webinspector.shim.remote", "com.apple.webinspector", false),
            ("com.apple.pcapd.shim.remote", "com.apple.pcapd", false),
            ("com.apple.misagent.shim.remote", "com.apple.misagent", false),
            ("com.apple.mobileactivationd.shim.remote", "com.apple.mobileactivationd", false),
            ("com.apple.mobile.MCInstall.shim.remote", "com.apple.mobile.MCInstall", false),
            ("com.apple.companion_proxy.shim.remote", "com.apple.companion_proxy", false),
            ("com.apple.preboardservice_v2.shim.remote", "com.apple.preboardservice_v2", false),
            ("com.apple.idamd.shim.remote", "com.apple.idamd", false),
            ("com.apple.mobilebackup2.shim.remote", "com.apple.mobilebackup2", false),
            ("com.apple.streaming_zip_conduit.shim.remote", "com.apple.streaming_zip_conduit", false),
            (
                "com.apple.accessibility.axAuditDaemon.remoteserver.shim.remote",
                "com.apple.accessibility.axAuditDaemon.remoteserver", false
            ),
            ("com.apple.security.cryptexd.remote", "com.apple.private.security.cryptexd.remote", true),
            ("com.apple.osanalytics.logTransfer", "com.apple.ReportCrash.antenna-access", true),
            ("com.apple.sysdiagnose.remote", "com.apple.private.sysdiagnose.remote", true),
            (
                "com.apple.dt.ViewHierarchyAgent.remote", "com.apple.private.dt.ViewHierarchyAgent.client",
                false
            ),
        ]
        var entries = served.map { name, entitlement, xpc, handler in
            Entry(
                name: name, entitlement: entitlement, port: nextPort(), usesRemoteXPC: xpc, handler: handler)
        }
        entries += listed.map { name, entitlement, xpc in
            Entry(
                name: name, entitlement: entitlement, port: nextPort(), usesRemoteXPC: xpc,
                handler: .listedOnly)
        }
        if !developerServices {
            entries.removeAll { Self.developerServiceNames.contains($0.name) }
        }
        return RSDServiceTable(rsdPort: rsdPort, entries: entries)
    }

    /// What the Developer disk image brings.
    static let developerServiceNames: Set<String> = [
        "com.apple.instruments.dtservicehub", "com.apple.dt.remoteFetchSymbols",
        "com.apple.dt.testmanagerd.remote",
        "com.apple.dt.testmanagerd.remote.automation", "com.apple.internal.dt.remote.debugproxy",
        "com.apple.dt.ViewHierarchyAgent.remote",
    ]

    /// `Services` of the RSD handshake: name → entitlement, port (a string, as devices send it),
    /// properties.
    var peerInfoServices: XPCValue {
        .dictionary(
            entries.map { entry in
                var properties: [(String, XPCValue)] = []
                if entry.usesRemoteXPC { properties.append(("UsesRemoteXPC", .bool(true))) }
                properties.append(("ServiceVersion", .int64(1)))
                return (
                    entry.name,
                    .dictionary([
                        ("Entitlement", .string(entry.entitlement)), ("Port", .string(String(entry.port))),
                        ("Properties", .dictionary(properties)),
                    ])
                )
            })
    }

    /// Starts listening on the tunnel's address: RSD, then every service served here.
    func install(on network: TunnelNetwork, runtime: DeviceRuntime) {
        let table = self
        // A connection opened in a tunnel a fault condemned cuts it instead (see DTXServiceHub).
        let listen = { (port: UInt16, accept: @escaping TunnelNetwork.Accept) in
            network.listen(port: port) { stream in
                if let cut = await runtime.cutCondemnedTunnels() {
                    runtime.logger.info("tunnel: a condemned tunnel was used and cut (\(cut))")
                    stream.close()
                    return
                }
                await accept(stream)
            }
        }
        listen(rsdPort) { stream in
            await RSDService.serve(stream: stream, runtime: runtime, table: table)
        }
        for entry in entries {
            switch entry.handler {
            case .listedOnly:
                continue
            case .lockdown:
                listen(entry.port) { stream in
                    guard await RSDCheckin.accept(on: stream, service: entry.name, runtime: runtime) else {
                        return
                    }
                    await ServiceHost.serve(nil, on: stream, runtime: runtime)
                }
            case .shim(let kind):
                listen(entry.port) { stream in
                    guard await RSDCheckin.accept(on: stream, service: entry.name, runtime: runtime) else {
                        return
                    }
                    await ServiceHost.serve(kind, on: stream, runtime: runtime)
                }
            case .instruments:
                listen(entry.port) { stream in
                    await DTXServiceHub.serve(stream: stream, runtime: runtime)
                }
            }
        }
    }
}

/// The check-in that opens every lockdown service behind RSD: the host sends `RSDCheckin`, the
/// device echoes it, then answers as StartService would (with `Error` when the service is refused).
enum RSDCheckin {
    static func accept(on stream: ByteStream, service: String, runtime: DeviceRuntime) async -> Bool {
        do {
            let request = try await stream.readDictionary(timeout: .seconds(30))
            guard request["Request"] as? String == "RSDCheckin" else {
                runtime.logger.debug("RSD: \(service) opened without RSDCheckin")
                stream.close()
                return false
            }
            try await stream.writePropertyList(["Request": "RSDCheckin"])
            try await stream.writePropertyList(["Request": "StartService", "Service": service])
            return true
        } catch {
            runtime.logger.debug("RSD: \(service) check-in failed: \(error)")
            stream.close()
            return false
        }
    }
}
