import CTerminalShims
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

    @Test func aSpeedIsGivenOnlyByADigitsPart() {
        #expect(SerialSettings.specifiesSpeed("4800"))
        #expect(SerialSettings.specifiesSpeed("8N1, 9600"))
        #expect(!SerialSettings.specifiesSpeed(""))
        #expect(!SerialSettings.specifiesSpeed("8N1,flow=rtscts"))
    }

    /// Every refusal says what to try instead, and that is never the value just refused (a port at
    /// 115200 refused must not be told to use 115200).
    @Test(arguments: ["115200,8N1", "9600,7E2,flow=rtscts", "4800,8O1,flow=xonxoff", "57600,5N2", "flow=dtrdsr"])
    func noRefusalProposesTheRefusedValue(spec: String) throws {
        let settings = try SerialSettings(parsing: spec)
        let refused: [(Int32, String)] = [
            (Int32(WORKOUT_SERIAL_BAD_BAUD), "@\(settings.baudRate)"),
            (Int32(WORKOUT_SERIAL_BAD_DATA_BITS), "\(settings.dataBits) data bit"),
            (Int32(WORKOUT_SERIAL_BAD_PARITY), "(\(settings.dataBits)\(settings.parity.letter)"),
            (Int32(WORKOUT_SERIAL_BAD_STOP_BITS), "\(settings.stopBits) stop bit"),
            (Int32(WORKOUT_SERIAL_BAD_FLOW), "flow=\(settings.flowControl.rawValue)"),
        ]
        for (code, value) in refused {
            let message = settings.refusal(code: code, path: "/dev/ttyUSB0", backend: "termios").description
            let advice = try #require(message.split(separator: ";").last.map(String.init), "\(message)")
            #expect(advice.contains("try") || advice.contains("give"), "\(message)")
            #expect(!advice.contains(value), "\(message)")
        }
        let pinned = settings.fixedSpeedRefusal(path: "/dev/ttyUSB0", kept: 9600).description
        #expect(pinned.contains("@9600"))
        if settings.baudRate != 9600 {
            #expect(!(pinned.split(separator: ":").dropFirst().joined()).contains("\(settings.baudRate)"), "\(pinned)")
        }
    }
}
