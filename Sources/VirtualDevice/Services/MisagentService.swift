import Foundation
import HADeployCore
import HostCrypto

/// com.apple.misagent: the provisioning profiles installed on the device, as libimobiledevice's
/// misagent client and pymobiledevice3's `provision` speak to it — `Copy` / `CopyAll` (iOS 9.3+)
/// answer `Payload`, the profiles as signed; `Install` takes one (`Profile`); `Remove` drops one by
/// `ProfileID` (its UUID). `Status` 0 is success. An installed app's embedded profile is installed
/// with it, as on a real device.
struct MisagentService {
    let runtime: DeviceRuntime
    let stream: ByteStream

    func run() async throws {
        while true {
            let request = try await stream.readDictionary(timeout: .seconds(600))
            switch request["MessageType"] as? String ?? "" {
            case "Copy", "CopyAll":
                try await stream.writePropertyList(["Status": 0, "Payload": Self.installed(runtime)])
            case "Install":
                guard let profile = request["Profile"] as? Data, Self.store(profile, runtime: runtime) else {
                    // MISAgent's "the profile is not valid" (MIS_E_INVALID_PROFILE).
                    try await stream.writePropertyList(["Status": 0xE800_8001])
                    continue
                }
                try await stream.writePropertyList(["Status": 0])
            case "Remove":
                let id = request["ProfileID"] as? String ?? ""
                let file = runtime.paths.profiles.appendingPathComponent("\(id).mobileprovision")
                let known = !id.contains("/") && runtime.fileSystem.fileExists(atPath: file.path)
                if known { try? runtime.fileSystem.removeItem(at: file) }
                try await stream.writePropertyList(["Status": known ? 0 : 0xE800_8003])
            default:
                try await stream.writePropertyList(["Status": 0xE800_8001, "Error": "UnknownMessageType"])
            }
        }
    }

    /// The installed profiles, oldest file name first.
    static func installed(_ runtime: DeviceRuntime) -> [Data] {
        let folder = runtime.paths.profiles
        let names = ((try? runtime.fileSystem.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
        return names.filter { $0.hasSuffix(".mobileprovision") }.compactMap {
            runtime.fileSystem.contents(atPath: folder.appendingPathComponent($0).path)
        }
    }

    /// Keeps a signed profile under its UUID; false when it is not one.
    @discardableResult
    static func store(_ data: Data, runtime: DeviceRuntime) -> Bool {
        guard let profile = ProfileVerification.profile(in: data),
            profile.uuid.allSatisfy({ $0.isHexDigit || $0 == "-" }), !profile.uuid.isEmpty
        else { return false }
        let folder = runtime.paths.profiles
        do {
            try runtime.fileSystem.createDirectory(at: folder, withIntermediateDirectories: true)
            try runtime.fileSystem.write(
                data, to: folder.appendingPathComponent("\(profile.uuid).mobileprovision"))
            return true
        } catch {
            return false
        }
    }

    static func installEmbeddedProfile(of bundle: URL, runtime: DeviceRuntime) throws {
        let file = bundle.appendingPathComponent("embedded.mobileprovision")
        guard let data = runtime.fileSystem.contents(atPath: file.path) else { return }
        store(data, runtime: runtime)
    }
}
