import Testing

@testable import WorkoutSensors

@Suite("serial settings")
struct SerialSettingsTests {
    @Test func compactFormsParse() throws {
        #expect(try SerialSettings(parsing: "") == .standard)
        #expect(try SerialSettings(parsing: "115200,8N1") == .standard)
        #expect(try SerialSettings(parsing: "4800") == SerialSettings(baudRate: 4800))
        #expect(try SerialSettings(parsing: "7e2") == SerialSettings(dataBits: 7, parity: .even, stopBits: 2))
        #expect(
            try SerialSettings(parsing: "flow=RTSCTS, 9600 ,5S2")
                == SerialSettings(baudRate: 9600, dataBits: 5, parity: .space, stopBits: 2, flowControl: .rtsCts))
        #expect(try SerialSettings(parsing: "57600,8M1,flow=xonxoff").flowControl == .xonXoff)
        #expect(try SerialSettings(parsing: "6O1,flow=dtrdsr").parity == .odd)
        #expect(try SerialSettings(parsing: "flow=none") == .standard)
    }

    @Test func descriptionRoundTrips() throws {
        for parity in SerialSettings.Parity.allCases {
            for flow in SerialSettings.FlowControl.allCases {
                for bits in 5...8 {
                    let settings = try SerialSettings(
                        baudRate: 19200, dataBits: bits, parity: parity, stopBits: bits == 5 ? 2 : 1, flowControl: flow)
                    #expect(try SerialSettings(parsing: settings.description) == settings)
                }
            }
        }
        #expect(SerialSettings.standard.description == "115200,8N1")
        #expect(try SerialSettings(parsing: "9600,7E2,flow=rtscts").description == "9600,7E2,flow=rtscts")
    }

    @Test(arguments: [
        ("9N1", "9 data bits"), ("4N1", "4 data bits"), ("8N3", "3 stop bits"), ("8X1", "'8X1' is not"),
        ("0", "outside"), ("4000001", "outside"), ("fast", "'fast' is not"), ("115200,,8N1", "empty part"),
        ("115200,9600", "speed is given twice"), ("8N1,7E1", "frame is given twice"),
        ("flow=rts", "unknown flow control 'rts'"), ("flow=none,flow=rtscts", "flow control is given twice"),
        ("-9600", "'-9600' is not"),
    ])
    func badSpecsAreRefusedWithTheReason(spec: String, reason: String) {
        #expect {
            try SerialSettings(parsing: spec)
        } throws: { error in
            guard let error = error as? SensorError, case .invalidSettings(let named, let detail) = error else {
                return false
            }
            return named == spec && detail.contains(reason) && error.description.contains("115200,8N1")
        }
    }

    @Test func valuesOutOfRangeAreRefused() {
        #expect(throws: SensorError.self) { try SerialSettings(baudRate: 0) }
        #expect(throws: SensorError.self) { try SerialSettings(dataBits: 9) }
        #expect(throws: SensorError.self) { try SerialSettings(stopBits: 3) }
    }
}
