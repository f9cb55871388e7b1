import Foundation
import Testing
import WorkoutModel
import WorkoutSensors
import WorkoutSimulator

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Simulator: disconnects")
struct DisconnectTests {
    @Test func aDisconnectedPortSendsNothingAndItsSensorsAreSilent() throws {
        let scenario = try Scenario.load("half")
        let gaps = try #require(scenario.disconnects)
        var simulator = WatchSimulator(scenario: scenario, seed: 3)
        var emitter = WireEmitter(start: simulator.start)
        var silentAnt = 0
        var silentGPS = 0
        while let second = simulator.next() {
            let bytes = emitter.encode(second)
            let t = Double(second.offset)
            for gap in gaps where t >= gap.start && t < gap.start + gap.duration {
                #expect(second.disconnected.contains(gap.port))
                #expect(bytes[gap.port]?.isEmpty == true)
                switch gap.port {
                case .ant:
                    silentAnt += 1
                    #expect(!second.samples.contains { $0.type == .heartRate || $0.type == .cyclingPower })
                case .gps:
                    silentGPS += 1
                    #expect(second.route.isEmpty)
                case .watch:
                    break
                }
            }
        }
        #expect(silentAnt == 30 && silentGPS == 60)
        var bad = try JSONSerialization.jsonObject(with: JSONEncoder().encode(scenario)) as? [String: Any] ?? [:]
        bad["disconnects"] = [["port": "usb", "start": 1, "duration": 2]]
        #expect(throws: ScenarioError.self) {
            try Scenario.decode(try JSONSerialization.data(withJSONObject: bad), file: "bad.json")
        }
    }
}
