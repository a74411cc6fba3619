import DeployModel
import DeviceSpec
import Foundation
import HADeployBuild
import HADeployCore
import HADeployDrivers

/// No Xcode here, and a build is needed: the deploy stops before touching any device.
public struct NoXcodeError: Error, CustomStringConvertible, ExitStatusProviding {
    public var flavours: [String]
    public var host: HostPlatform

    public var description: String {
        let which = flavours.joined(separator: ", ")
        let why =
            host == .linux
            ? "this is Linux, where Xcode cannot run" : "the flavour's Xcode is not installed here"
        return """
            cannot build \(which): \(why). Nothing was deployed. Ways on:
              1. hadeploy … --no-build --artifact PATH      an .ipa or .app built elsewhere (one for every flavour)
              2. hadeploy … --no-build --artifacts DIR      DIR/<flavour>/*.ipa (or .app), e.g. from a CI build job
              3. build_host: ssh://user@mac-mini   in devices.yaml: a Mac with the flavour's Xcode, reached
                 over SSH; hadeploy sends the source tree (HEAD plus uncommitted changes), builds there
                 and fetches the app back (trust it first: hadeploy trust-host ssh://user@mac-mini)
            Or try the whole pipeline on virtual devices: hadeploy all --virtual
            """
    }

    public var exitStatus: ExitStatus { .buildFailed }
}

/// Where each flavour's installable app comes from.
public enum ArtifactSource: Sendable {
    /// One artifact for every flavour (`--artifact`).
    case single(URL)
    /// `DIR/<flavour>/` holding one `.ipa` or `.app` (`--artifacts`), or `DIR/<flavour>.ipa`.
    case directory(URL)
    /// Demo bundles generated for virtual devices.
    case demo(directory: URL, bundleID: String)
    /// Build with Xcode.
    case build
    /// Artifacts another hadeploy already has (a worker process: `{"<flavour>": "<path>"}`).
    case manifest(URL)

    /// Resolves an artifact for every flavour the plan's available devices use.
    public func artifacts(for plan: DeployPlan, matrix: DeviceMatrix, host: HostPlatform) throws -> [String:
        Artifact]
    {
        let flavours = Array(Set(plan.devices.filter { $0.availability == .available }.map(\.flavour)))
            .sorted()
        let inspector = ArtifactInspector()
        var result: [String: Artifact] = [:]
        switch self {
        case .single(let url):
            for flavour in flavours { result[flavour] = try inspector.inspect(url, flavour: flavour) }
        case .directory(let directory):
            for flavour in flavours {
                guard let url = Self.find(flavour: flavour, in: directory) else {
                    throw ArtifactError(
                        path: directory.path,
                        problem:
                            "no artifact for flavour \(flavour): expected \(flavour)/<Name>.ipa, \(flavour)/<Name>.app or \(flavour).ipa"
                    )
                }
                result[flavour] = try inspector.inspect(url, flavour: flavour)
            }
        case .demo(let directory, let bundleID):
            let builder = DemoAppBuilder(bundleID: bundleID)
            for name in flavours {
                guard let flavour = matrix.flavour(named: name) else { continue }
                result[name] = try builder.build(
                    flavour: flavour, marketingVersion: plan.version.marketingVersion,
                    buildNumber: plan.version.buildNumber, into: directory)
            }
        case .build:
            throw NoXcodeError(flavours: flavours, host: host)
        case .manifest(let file):
            let paths = try JSONDecoder().decode([String: String].self, from: Data(contentsOf: file))
            for flavour in flavours {
                guard let path = paths[flavour] else {
                    throw ArtifactError(path: file.path, problem: "no artifact for flavour \(flavour)")
                }
                result[flavour] = try inspector.inspect(URL(fileURLWithPath: path), flavour: flavour)
            }
        }
        return result
    }

    static func find(flavour: String, in directory: URL) -> URL? {
        let candidates = [directory.appendingPathComponent("\(flavour).ipa")]
        if FileManager.default.fileExists(atPath: candidates[0].path) { return candidates[0] }
        let sub = directory.appendingPathComponent(flavour)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: sub.path)) ?? []
        if let name = names.sorted().first(where: { $0.hasSuffix(".ipa") || $0.hasSuffix(".app") }) {
            return sub.appendingPathComponent(name)
        }
        return nil
    }
}
