import Foundation
import SensorTestSupport
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutSensors
import WorkoutTestSupport

@testable import WorkoutCLI

@Suite("workout record: sensor specs")
struct SensorSpecTests {
    /// An nmea port without a speed has its speed hunted; a speed given is used as it is.
    @Test func anNMEAPortWithoutASpeedIsHunted() throws {
        let sensors = try RecordCommand.parseSensors([
            "/dev/ttyUSB0:nmea", "/dev/ttyUSB1:nmea@4800", "/dev/ttyUSB2:nmea@8N1", "/dev/ttyUSB3:ant",
            "/dev/ttyUSB4:watch",
        ])
        #expect(sensors.map(\.huntsSpeed) == [true, false, true, false, false])
        #expect(sensors[1].settings.baudRate == 4800)
        #expect(sensors[3].settings.acceptsFixedSpeed)
    }
}
