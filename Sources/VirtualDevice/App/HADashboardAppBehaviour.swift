import Foundation
import HADeployCore

/// The default app behaviour of a virtual device: every launched app acts like HA Dashboard
/// (``VirtualHADashboardApp``), with its data container in the device's state directory.
public struct HADashboardAppBehaviour: VirtualAppBehaviour {
    public var options: VirtualHADashboardOptions

    public init(options: VirtualHADashboardOptions = VirtualHADashboardOptions()) {
        self.options = options
    }

    public func run(_ launch: VirtualAppLaunch, context: VirtualAppContext) async {
        var options = options
        options.sendsLoadedEvent = options.sendsLoadedEvent || launch.sendsLoadedEvent
        await VirtualHADashboardApp.run(
            Self.appLaunch(launch, options: options, fileSystem: context.fileSystem)
        ) { screen in
            context.show(screen)
        }
    }

    static func appLaunch(
        _ launch: VirtualAppLaunch, options: VirtualHADashboardOptions, fileSystem: any FileSystem
    ) -> VirtualHADashboardLaunch {
        VirtualHADashboardLaunch(
            bundleIdentifier: launch.bundleIdentifier, displayName: launch.displayName,
            version: launch.version,
            build: launch.build, arguments: launch.arguments, dataContainer: launch.dataContainer,
            deviceName: launch.deviceName, model: launch.productType.hasPrefix("iPhone") ? "iPhone" : "iPad",
            machine: launch.productType, systemVersion: launch.productVersion, options: options,
            fileSystem: fileSystem)
    }
}
