// The JACK node family; see JackClient.swift.
import SpeechGraphCore
