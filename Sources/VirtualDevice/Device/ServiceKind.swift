/// The lockdown services the emulator runs (PROTOCOL.md §2.7 for names and TLS use).
enum ServiceKind: Sendable, Equatable {
    case afc
    case installationProxy
    /// `insecure` = `com.apple.mobile.insecure_notification_proxy` (for untrusted clients).
    case notificationProxy(insecure: Bool)
    case imageMounter
    case crashReportMover
    case crashReportCopy
    case screenshotr
    /// `com.apple.mobile.house_arrest`: VendContainer/VendDocuments, then AFC in that app's container.
    case houseArrest
    /// `secure` = `com.apple.debugserver.DVTSecureSocketProxy` (TLS for the whole connection, iOS 14+).
    case debugserver(secure: Bool)
    case syslogRelay
    case osTraceRelay
    case diagnosticsRelay
    case springBoardServices
    case heartbeat
    /// `com.apple.internal.devicecompute.CoreDeviceProxy` (iOS 17.4+): the developer tunnel.
    case coreDeviceProxy
    /// `com.apple.misagent`: the installed provisioning profiles.
    case misagent

    /// Whether the service connection starts with a TLS handshake (`EnableServiceSSL`).
    var usesTLS: Bool {
        if case .debugserver(let secure) = self { return secure }
        return self == .coreDeviceProxy
    }

    /// Whether it needs the Developer disk image (PROTOCOL.md §6.2).
    var isDeveloperService: Bool {
        switch self {
        case .screenshotr, .debugserver: return true
        default: return false
        }
    }

    /// Resolves a lockdown service name for a device running iOS `major`.
    static func named(_ name: String, major: Int) -> ServiceKind? {
        switch name {
        case "com.apple.afc": return .afc
        case "com.apple.mobile.installation_proxy": return .installationProxy
        case "com.apple.mobile.notification_proxy": return .notificationProxy(insecure: false)
        case "com.apple.mobile.insecure_notification_proxy": return .notificationProxy(insecure: true)
        case "com.apple.syslog_relay": return .syslogRelay
        // The unified log (os_log) and its relay arrived with iOS 10.
        case "com.apple.os_trace_relay": return major >= 10 ? .osTraceRelay : nil
        case "com.apple.mobile.diagnostics_relay": return .diagnosticsRelay
        case "com.apple.springboardservices": return .springBoardServices
        case "com.apple.mobile.heartbeat": return .heartbeat
        case "com.apple.misagent": return .misagent
        case "com.apple.mobile.mobile_image_mounter": return .imageMounter
        case "com.apple.crashreportmover": return .crashReportMover
        case "com.apple.crashreportcopymobile": return .crashReportCopy
        case "com.apple.mobile.screenshotr": return .screenshotr
        case "com.apple.mobile.house_arrest": return .houseArrest
        case "com.apple.debugserver": return .debugserver(secure: false)
        // The secure proxy exists from iOS 14 (PROTOCOL.md §7.1); older devices answer InvalidService.
        case "com.apple.debugserver.DVTSecureSocketProxy":
            return major >= 14 ? .debugserver(secure: true) : nil
        case CoreDeviceProxyService.serviceName: return major >= 17 ? .coreDeviceProxy : nil
        default: return nil
        }
    }
}
