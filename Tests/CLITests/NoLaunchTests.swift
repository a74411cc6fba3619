import Foundation
import TestSupport
import Testing

/// `launch: false` (the old scripts' iPad mini 4: `ideviceinstaller upgrade`, no launch, "to keep its
/// existing settings"): the plan stops after the install, and a real deploy to the device's virtual
/// twin installs, never launches, and says so instead of claiming success.
@Test func aDeviceWithLaunchFalseIsInstalledAndLeftAlone() async throws {
    let project = try await Project(commits: 2, tag: "v1.2.5")
    var yaml = try project.read("devices.yaml")
    let mini4 = try #require(yaml.range(of: "    udid: ${IPAD_MINI4_UDID}\n"))
    yaml.replaceSubrange(mini4, with: "    udid: ${IPAD_MINI4_UDID}\n    launch: false\n")
    try project.write(yaml, to: "devices.yaml")

    let plan = try await project.run("plan", "mini4", "--json")
    #expect(plan.status == 0, "\(plan.stderr)")
    let planned = try #require(
        try JSONSerialization.jsonObject(with: Data(plan.stdout.utf8)) as? [String: Any])
    let device = try #require((planned["devices"] as? [[String: Any]])?.first)
    let steps = (device["steps"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    #expect(steps.last == "install", "\(steps)")
    #expect(!steps.contains("launch") && !steps.contains("verify"))
    // The committed mini4 is the Wi-Fi device: `launch: false` composes with `network: true`.
    #expect((device["backend"] as? [String: Any])?["lookup"] as? String == "network")

    let deploy = try await project.run("mini4", "--virtual", "--no-verify", "--report", "out")
    #expect(deploy.status == 0, "\(deploy.stderr)")
    let summary = try #require(
        try JSONSerialization.jsonObject(with: Data(try project.read("out/summary.json").utf8))
            as? [String: Any])
    let result = try #require((summary["results"] as? [[String: Any]])?.first)
    #expect(result["outcome"] as? String == "installed only")
    #expect((result["reason"] as? String)?.contains("launch: false") == true)
    #expect(result["install"] as? String == "installed")
    let ran = (result["steps"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
    #expect(!ran.contains("launch"), "\(ran)")
    #expect(
        try project.read("out/index.html").contains("<span class=\"badge installed\">installed only</span>"))
}
