import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What the running program knows about itself and its host: environment variables, process id,
/// host and user name. Injected through the context.
public protocol SystemEnvironment: Sendable {
    var variables: [String: String] { get }
    var processIdentifier: Int32 { get }
    var hostName: String { get }
    var userName: String { get }
    /// The effective user id: whose rights this process acts with.
    var effectiveUserID: UInt32 { get }
    /// The absolute path of the running executable (symbolic links resolved), nil when unknown: an
    /// installed hadeploy finds what it carries (`share/hadeploy/...`) next to it.
    var executablePath: String? { get }
}

/// The running process's own: only `HADeployContext.live()` makes one.
struct LiveEnvironment: SystemEnvironment {
    var variables: [String: String] { ProcessInfo.processInfo.environment }
    var processIdentifier: Int32 { ProcessInfo.processInfo.processIdentifier }
    /// The kernel's host name: Foundation's `hostName` may wait on a DNS lookup.
    var hostName: String {
        var node = utsname()
        uname(&node)
        return withUnsafeBytes(of: node.nodename) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }
    var userName: String { variables["USER"] ?? NSUserName() }
    var effectiveUserID: UInt32 { UInt32(geteuid()) }
    var executablePath: String? {
        Bundle.main.executableURL.map { $0.resolvingSymlinksInPath().path }
    }
}
