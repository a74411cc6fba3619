extension DeviceRuntime {
    /// The `crashOnLaunch` fault, whoever launches (debugserver, instruments' process control): the
    /// app starts and dies at once — its crash handler writes its log first — and the device
    /// writes the crash report it would after an `Abort trap: 6`.
    func crashAtLaunch(_ app: VirtualInstalledApp, arguments: [String], environment: [String]) {
        VirtualHADashboardApp.crashAtLaunch(
            HADashboardAppBehaviour.appLaunch(
                appLaunch(app, arguments: arguments, environment: environment),
                options: VirtualHADashboardOptions(), fileSystem: fileSystem))
        _ = try? writeCrashReport(for: app, reason: "Abort trap: 6 (injected crash on launch)")
        logger.info("crashOnLaunch fault: \(app.bundleIdentifier) crashed")
    }
}
