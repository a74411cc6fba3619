import Foundation
import HADeployCore
import Testing

/// The reporters' numbers without `String(format:)`: the same text as printf's `%.Nf` writes.
struct FixedPointTests {
    @Test func theTextIsPrintfsForTheValuesTheReportersShow() {
        var generator = SystemRandomNumberGenerator()
        var compared = 0
        for decimals in 0...3 {
            for magnitude in [1.0, 10, 1_000, 1e6] {
                for _ in 0..<2_000 {
                    let value = Double.random(in: -magnitude...magnitude, using: &generator)
                    // An exact tie in binary is rare and printf's own business (it rounds the exact
                    // value; this rounds the scaled one): left out.
                    var scale = 1.0
                    for _ in 0..<decimals { scale *= 10 }
                    let scaled = value.magnitude * scale
                    if abs(scaled - scaled.rounded(.down) - 0.5) < 1e-6 { continue }
                    let expected = String(format: "%.\(decimals)f", value)
                    let text = FixedPoint.text(value, decimals: decimals)
                    // printf keeps a minus sign on a value that rounds to zero ("-0.0"); hadeploy never
                    // prints a negative size or time.
                    #expect(text == expected || "-" + text == expected, "\(value) with \(decimals)")
                    compared += 1
                }
            }
        }
        #expect(compared > 30_000)
        #expect(FixedPoint.text(9.96, decimals: 1) == "10.0")
        #expect(FixedPoint.text(0.04, decimals: 2) == "0.04")
        #expect(FixedPoint.text(20_500_000 / 1e6, decimals: 1) == "20.5")
        #expect(FixedPoint.text(3, decimals: 0) == "3")
        #expect(FixedPoint.text(.infinity, decimals: 1) == "inf")
    }
}
