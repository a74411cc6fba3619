import DeviceSpec
import HADeployDrivers

/// What the CLI asks about a device's backend, answered by the registry (`Backends`): the CLI names
/// no backend and no `transport:` word.
public enum BackendQuestions {
    /// Reached through usbmuxd and lockdownd: `hadeploy pair` pairs it.
    public static func pairs(_ device: Device) -> Bool { Backends.throughUsbmuxd(device) }

    /// Its `--virtual` twin is a jailbroken one (its own process, reached over SSH), not one of the
    /// in-process usbmuxd twins.
    public static func hasJailbrokenTwin(_ device: Device) -> Bool {
        Backends.twin(for: device) == .jailbroken
    }

    /// `hadeploy rollback` puts the Mac app's backup back (not a jailbroken iPad's).
    public static func rollsBackTheMacApp(_ device: Device) -> Bool { Backends.rollback(for: device) == .mac }
}
