import DeployModel
import Foundation
import HADeployCore
import HADeployDrivers

/// Whether a device checks a build's provisioning profile, and what the profile says for it: the one
/// rule the deploy (before the upload) and `plan` (per device) share. A physical iOS device known by
/// its hardware UDID checks it; a jailbroken one runs ldid's signature, simulators and the Mac none.
public enum ProfileCoverage {
    /// The hardware UDID `artifact`'s profile must list for `device`, or nil when there is nothing to
    /// check (no profile, not a physical iOS device that checks, a CoreDevice id not yet resolved).
    static func checkedUDID(_ device: DevicePlan, _ artifact: Artifact, udid known: String? = nil) -> String?
    {
        guard Backends.platform(of: device) == .iOS, artifact.platform == .iOS, device.kind == .device,
            device.backend.kind != SSHBackend.kind, artifact.provisioning != nil,
            let udid = known ?? device.udid?.value, ProvisioningProfile.isHardwareUDID(udid)
        else { return nil }
        return udid
    }

    /// Why `device` refuses `artifact`, or nil.
    public static func refusal(
        _ device: DevicePlan, _ artifact: Artifact, udid known: String? = nil, now: Date
    )
        -> String?
    {
        guard let udid = checkedUDID(device, artifact, udid: known), let profile = artifact.provisioning
        else { return nil }
        return profile.problem(udid: udid, bundleID: artifact.bundleID, now: now)
    }

    /// What `plan` says: the profile, whether it covers the device, and until when; nil where no
    /// profile is involved (the Mac).
    public static func summary(_ device: DevicePlan, _ artifact: Artifact, now: Date) -> String? {
        guard Backends.platform(of: device) == .iOS, artifact.platform == .iOS else { return nil }
        if device.kind != .device { return "not checked (a simulator runs any build)" }
        if device.backend.kind == SSHBackend.kind {
            return "not checked (ldid signs the app on the jailbroken device)"
        }
        guard let profile = artifact.provisioning else {
            return
                "the build has no embedded.mobileprovision: a device refuses it unless a profile installed "
                + "on it covers the app (sign it for Development or Ad Hoc with this device's UDID)"
        }
        guard checkedUDID(device, artifact) != nil else {
            return "\(profile.label), checked when the device connects (by the hardware UDID it reports)"
        }
        if let problem = refusal(device, artifact, now: now) { return "refused — " + problem }
        let until = profile.expirationDate.map {
            ", until "
                + ISO8601DateFormatter.string(
                    from: $0, timeZone: TimeZone(identifier: "UTC")!, formatOptions: [.withFullDate])
        }
        return "\(profile.label) lists this device\(until ?? "")"
    }
}
