import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import HADeployDrivers
import SSHTransport
import Versioning

/// `hadeploy trust-host TARGET`: which SSH server TARGET names (a device of the matrix, the
/// `build_host`, or an `ssh://` address), its key, and trusting it once a person (or
/// `--fingerprint`) has confirmed it.
public struct HostTrustRequest: Sendable {
    public var connection: SSHConnectionConfig
    public var label: String
    public var knownHosts: String

    public init(
        target: String, matrix: DeviceMatrix, variables: [String: String], topology: Topology,
        configPath: String, fileSystem: any FileSystem
    ) throws {
        knownHosts = SSHLogin.knownHostsPath(variables)
        if target.hasPrefix("ssh://") || target == "build_host" || target == "build-host" {
            // The remote builder (or a USB host): an address rather than a device.
            var address = target
            if !target.hasPrefix("ssh://") {
                guard let value = matrix.buildHost?.resolve(variables).value, !value.isEmpty else {
                    throw TrustTargetError(message: "\(configPath) has no build_host")
                }
                address = value
            }
            connection = try SSHConnectionConfig.parse(
                url: address, authentication: .agent(socketPath: nil), knownHostsPath: knownHosts,
                fileSystem: fileSystem, name: address)
            label = address
            return
        }
        guard let device = try TargetResolver(matrix: matrix).resolve([target]).first,
            device.ssh != nil || Backends.word(of: device)?.needsHost == true
        else { throw TrustTargetError(message: "\(target) is not reached over SSH in \(configPath)") }
        let plan = try DeployPlanner(matrix: matrix, variables: variables, topology: topology)
            .plan(
                options: DeployOptions(targets: [target], verify: false), version: .unversioned,
                deployID: "trust")
        guard let devicePlan = plan.devices.first else { throw TrustTargetError(message: "no such device") }
        guard var ssh = try Backends.configuration(SSHBackend.self, of: devicePlan) else {
            throw TrustTargetError(message: "\(target) is not reached over SSH in \(configPath)")
        }
        ssh.knownHosts = knownHosts
        connection = try SSHDriver.config(
            ssh, plan: devicePlan, environment: variables, fileSystem: fileSystem
        ).connection
        label = device.name
    }

    public func scan() async throws -> HostKeyInfo { try await HostKeyTrust.scan(connection) }

    /// Trusts the scanned key: `fingerprint` when given (CI), else what a person types at the prompt.
    public func trust(
        _ info: HostKeyInfo, fingerprint: String?, replace: Bool, context: HADeployContext
    ) async throws -> HostKeyInfo {
        var confirmed = fingerprint
        if confirmed == nil {
            guard context.input.isInteractive else {
                throw TrustTargetError(
                    message:
                        "not a terminal: pass --fingerprint \(info.fingerprint) after checking it on the device"
                )
            }
            context.message("Trust this key? Type the fingerprint's last 6 characters to confirm: ")
            let answer = context.input.readLine()?.trimmingCharacters(in: .whitespaces) ?? ""
            guard answer.count >= 6, info.fingerprint.hasSuffix(answer) else {
                throw TrustTargetError(message: "not confirmed; nothing was written")
            }
            confirmed = info.fingerprint
        }
        return try await HostKeyTrust.trust(connection, expectedFingerprint: confirmed!, replace: replace)
    }
}

/// trust-host was given something it cannot trust (exit 64, like a wrong argument).
public struct TrustTargetError: Error, CustomStringConvertible, ExitStatusProviding {
    public var message: String
    public var description: String { message }
    public var exitStatus: ExitStatus { .usage }
}
