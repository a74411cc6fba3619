import DeviceSpec
import Foundation
import HADeployBuild
import HADeployCore
import HADeployKit
import Versioning

/// What `hadeploy devices` says about the `build_host:`: reachable and trusted, and which Xcode each
/// flavour finds there. Asks one `xcodebuild -version` per flavour; sends no source.
public struct BuildHostStatus: Sendable, Encodable {
    public var address: String
    /// nil when the host answered; else why not (unreachable, untrusted key, login refused…).
    public var problem: String?
    /// Flavour → the Xcode version line there, or what went wrong for that flavour.
    public var flavours: [String: String]

    public static func probe(
        address: String, matrix: DeviceMatrix, variables: [String: String], context: HADeployContext
    ) async -> BuildHostStatus {
        let builder = BuildCommandBuilder.resolved(variables: variables, version: GitVersion.unversioned)
        let runner = BuildRunner(context: context, matrix: matrix, builder: builder, host: .current)
        let machine: RemoteBuildMachine
        do {
            machine = try runner.remoteMachine(address: address)
        } catch {
            return BuildHostStatus(address: address, problem: "\(error)", flavours: [:])
        }
        var flavours: [String: String] = [:]
        var problem: String?
        for flavour in matrix.flavours where Flavour.sdks.contains(flavour.sdk) {
            var command = ProcessCommand(builder.tools["xcodebuild"] ?? "xcodebuild", ["-version"])
            command.environment = builder.xcodebuild(flavour).environment
            do {
                let output = try await machine.query(try await machine.adapt(command), timeout: .seconds(30))
                let first = output.stdout.split(separator: "\n").first.map(String.init) ?? ""
                flavours[flavour.name] =
                    output.status == 0
                    ? first
                    : "no usable Xcode (\(command.environment["DEVELOPER_DIR"] ?? "default")): "
                        + Self.firstLine(output.stderr, or: "exit status \(output.status)")
            } catch {
                problem = "\(error)"
                break
            }
        }
        await machine.finish()
        return BuildHostStatus(address: address, problem: problem, flavours: problem == nil ? flavours : [:])
    }

    static func firstLine(_ text: String, or fallback: String) -> String {
        text.split(separator: "\n").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? fallback
    }

    public var text: String {
        if let problem { return "build host \(address): \(problem)" }
        let lines = flavours.sorted { $0.key < $1.key }.map { "  \($0.key): \($0.value)" }
        return (["build host \(address): reachable"] + lines).joined(separator: "\n")
    }
}
